//! Finding NVRTC off the library path: where `pip install nvidia-cuda-nvrtc` puts it (a
//! virtualenv, the project's `.venv-nvrtc`, the user's or the system's site-packages) and where
//! the CUDA toolkit does. cudarc opens NVRTC by name (`libnvrtc.so.13`), so the library found here
//! is opened by its full path first and kept open: the dynamic loader then answers cudarc's
//! request by name with it (a library already loaded matches its soname).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where the `nvidia-cuda-nvrtc` wheel (CUDA 13) puts the library, inside a site-packages folder.
pub const WHEEL_LIB_DIR: &str = "nvidia/cu13/lib";
/// The library's name.
pub const NVRTC_LIB: &str = "libnvrtc.so.13";
/// The one command that installs it, the version matching the recorded results' driver.
pub const INSTALL_HINT: &str = "`pip install nvidia-cuda-nvrtc==13.0.88` (in a virtualenv, in \
    .venv-nvrtc at the project's root, or with --user), or install the CUDA 13 toolkit";

/// What the search looks at: the environment, the working and program folders, and the root of
/// the file system (a fake one in tests).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NvrtcSearch {
    /// `KERNELBOOK_NVRTC`: the library's path, or a folder holding it.
    pub explicit: Option<PathBuf>,
    /// `VIRTUAL_ENV`.
    pub virtual_env: Option<PathBuf>,
    /// Folders that may hold `.venv-nvrtc` or `.venv`: the project's root, the working folder,
    /// the program's, and their parents.
    pub project_dirs: Vec<PathBuf>,
    /// The user's Python base (`PYTHONUSERBASE`, else `$HOME/.local`).
    pub user_base: Option<PathBuf>,
    /// `CUDA_HOME` and `CUDA_PATH`.
    pub cuda_homes: Vec<PathBuf>,
    /// `/`, where the system's site-packages and `/usr/local/cuda` are looked for.
    pub root: PathBuf,
    /// The site-packages folders `python3` itself reports (pyenv, conda and the like), asked
    /// only where nothing else is found ([`NvrtcSearch::with_python_sites`]).
    pub python_sites: Vec<PathBuf>,
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The project's root folder, where its `.venv-nvrtc` is looked for first.
static PROJECT_ROOT: OnceLock<PathBuf> = OnceLock::new();

/// Says where the project is (the CLI's `--root`), before NVRTC is first looked for.
pub fn set_project_root(root: &Path) {
    let root = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    let _ = PROJECT_ROOT.set(root);
}

/// `dir` and its parents.
fn with_parents(dir: &Path) -> impl Iterator<Item = PathBuf> + '_ {
    dir.ancestors().map(Path::to_path_buf)
}

impl NvrtcSearch {
    /// The search for this process.
    pub fn from_env() -> NvrtcSearch {
        let mut project_dirs: Vec<PathBuf> = PROJECT_ROOT.get().cloned().into_iter().collect();
        if let Ok(cwd) = std::env::current_dir() {
            project_dirs.extend(with_parents(&cwd));
        }
        if let Some(exe_dir) = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(Path::to_path_buf))
        {
            project_dirs.extend(with_parents(&exe_dir));
        }
        NvrtcSearch {
            explicit: env_path("KERNELBOOK_NVRTC"),
            virtual_env: env_path("VIRTUAL_ENV"),
            project_dirs,
            user_base: env_path("PYTHONUSERBASE")
                .or_else(|| env_path("HOME").map(|home| home.join(".local"))),
            cuda_homes: ["CUDA_HOME", "CUDA_PATH"]
                .iter()
                .filter_map(|name| env_path(name))
                .collect(),
            root: PathBuf::from("/"),
            python_sites: Vec::new(),
        }
    }

    /// The same search with the site-packages folders `python3` on the `PATH` reports (its own
    /// and the user's); unchanged where there is no `python3`.
    pub fn with_python_sites(mut self) -> NvrtcSearch {
        let script =
            "import site\nfor p in site.getsitepackages() + [site.getusersitepackages()]: print(p)";
        let output = std::process::Command::new("python3")
            .args(["-I", "-c", script])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output();
        if let Some(output) = output.ok().filter(|o| o.status.success()) {
            self.python_sites = String::from_utf8_lossy(&output.stdout)
                .lines()
                .filter(|line| !line.is_empty())
                .map(PathBuf::from)
                .collect();
        }
        self
    }

    /// Every existing `libnvrtc.so.13` the search finds, best first, each once.
    pub fn candidates(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = Vec::new();
        if let Some(explicit) = &self.explicit {
            if explicit.is_file() {
                return vec![explicit.clone()];
            }
            dirs.push(explicit.clone());
        }
        let mut venvs: Vec<PathBuf> = self.virtual_env.iter().cloned().collect();
        for dir in &self.project_dirs {
            venvs.push(dir.join(".venv-nvrtc"));
            venvs.push(dir.join(".venv"));
        }
        let mut sites: Vec<PathBuf> = Vec::new();
        for venv in &venvs {
            sites.extend(python_dirs(&venv.join("lib"), "site-packages"));
        }
        if let Some(base) = &self.user_base {
            sites.extend(python_dirs(&base.join("lib"), "site-packages"));
        }
        for lib in ["usr/local/lib", "usr/lib"] {
            let lib = self.root.join(lib);
            sites.extend(python_dirs(&lib, "dist-packages"));
            sites.extend(python_dirs(&lib, "site-packages"));
        }
        sites.extend(self.python_sites.iter().cloned());
        dirs.extend(sites.iter().map(|site| site.join(WHEEL_LIB_DIR)));
        for home in self
            .cuda_homes
            .iter()
            .cloned()
            .chain([self.root.join("usr/local/cuda")])
        {
            dirs.push(home.join("lib64"));
            dirs.push(home.join("lib"));
        }
        let mut found: Vec<PathBuf> = Vec::new();
        for path in dirs.iter().map(|dir| dir.join(NVRTC_LIB)) {
            if path.is_file() && !found.contains(&path) {
                found.push(path);
            }
        }
        found
    }
}

/// `lib/python3*/NAME` and `lib/python3/NAME` under `lib`, in name order (newest Python last).
fn python_dirs(lib: &Path, name: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(lib) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok())
        .filter(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.starts_with("python3"))
        })
        .map(|entry| entry.path().join(name))
        .filter(|dir| dir.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// The NVRTC builtins library beside `nvrtc` (`libnvrtc-builtins.so.13.0`), which NVRTC opens by
/// name when it compiles.
fn builtins_beside(nvrtc: &Path) -> Option<PathBuf> {
    let dir = nvrtc.parent()?;
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libnvrtc-builtins.so.13"))
        })
        .collect();
    found.sort();
    found.pop()
}

/// The library loaded from a candidate path, kept open for the life of the process.
static PRELOADED: OnceLock<Option<(PathBuf, Vec<libloading::Library>)>> = OnceLock::new();

/// The library [`preload`] opened, if it did.
pub fn preloaded() -> Option<&'static Path> {
    PRELOADED.get()?.as_ref().map(|(path, _)| path.as_path())
}

/// Gives a child of this process (the measuring child, through ncu too) the NVRTC this one
/// found off the library path, so that it need not look again (and finds it however it was
/// found: `--root` names a project elsewhere).
pub fn pass_to_child(command: &mut std::process::Command) {
    if let Some(path) = preloaded() {
        command.env("KERNELBOOK_NVRTC", path);
    }
}

/// Opens the first candidate that loads (its builtins first), once per process; returns its path.
/// `python3` is asked for its site-packages only where the search finds nothing without it.
pub fn preload(search: NvrtcSearch) -> Option<&'static Path> {
    PRELOADED
        .get_or_init(|| {
            let mut candidates = search.candidates();
            if candidates.is_empty() {
                candidates = search.with_python_sites().candidates();
            }
            candidates.into_iter().find_map(|path| {
                let mut libs = Vec::new();
                if let Some(builtins) = builtins_beside(&path) {
                    // SAFETY: loading NVRTC's own builtins library runs no code of ours; its
                    // initialisers are NVIDIA's, as when NVRTC opens it itself.
                    libs.extend(unsafe { libloading::Library::new(builtins) }.ok());
                }
                // SAFETY: as above, the NVRTC library itself, which cudarc would open by name.
                let nvrtc = unsafe { libloading::Library::new(&path) }.ok()?;
                libs.push(nvrtc);
                Some((path, libs))
            })
        })
        .as_ref()
        .map(|(path, _)| path.as_path())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(path: &Path) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, "not a real library").expect("write");
    }

    fn wheel(site: &Path) -> PathBuf {
        site.join(WHEEL_LIB_DIR).join(NVRTC_LIB)
    }

    #[test]
    fn nvrtc_is_found_where_pip_and_the_toolkit_put_it_best_first() {
        let fake = tempfile::tempdir().expect("tempdir");
        let at = |p: &str| fake.path().join(p);
        let venv = wheel(&at("venv/lib/python3.12/site-packages"));
        let project = wheel(&at("proj/.venv-nvrtc/lib/python3.11/site-packages"));
        let user = wheel(&at("home/.local/lib/python3.13/site-packages"));
        let system = wheel(&at("root/usr/local/lib/python3.11/dist-packages"));
        let debian = wheel(&at("root/usr/lib/python3/dist-packages"));
        let toolkit = at("root/usr/local/cuda/lib64").join(NVRTC_LIB);
        let cuda_home = at("cuda-13.0/lib64").join(NVRTC_LIB);
        for path in [
            &venv, &project, &user, &system, &debian, &toolkit, &cuda_home,
        ] {
            touch(path);
        }
        // Neither a wheel for another CUDA nor a folder named like the library counts.
        touch(&at(
            "home/.local/lib/python3.13/site-packages/nvidia/cu12/lib/libnvrtc.so.12",
        ));
        std::fs::create_dir_all(at(
            "proj/.venv/lib/python3.11/site-packages/nvidia/cu13/lib/libnvrtc.so.13",
        ))
        .expect("mkdir");
        let search = NvrtcSearch {
            explicit: None,
            virtual_env: Some(at("venv")),
            project_dirs: vec![at("proj/sub"), at("proj"), at("proj")],
            user_base: Some(at("home/.local")),
            cuda_homes: vec![at("cuda-13.0")],
            root: at("root"),
            python_sites: Vec::new(),
        };
        assert_eq!(
            search.candidates(),
            [
                venv,
                project,
                user.clone(),
                system,
                debian,
                cuda_home,
                toolkit
            ]
        );

        let explicit = NvrtcSearch {
            explicit: Some(user.clone()),
            ..search.clone()
        };
        assert_eq!(explicit.candidates(), std::slice::from_ref(&user));
        let pyenv = wheel(&at("pyenv/lib/python3.11/site-packages"));
        touch(&pyenv);
        let python = NvrtcSearch {
            python_sites: vec![at("pyenv/lib/python3.11/site-packages")],
            root: at("nowhere"),
            ..NvrtcSearch::default()
        };
        assert_eq!(python.candidates(), [pyenv]);
        let nothing = NvrtcSearch {
            root: at("nowhere"),
            ..NvrtcSearch::default()
        };
        assert!(nothing.candidates().is_empty());
        assert_eq!(builtins_beside(&user), None);
        let builtins = user.with_file_name("libnvrtc-builtins.so.13.0");
        touch(&builtins);
        assert_eq!(builtins_beside(&user), Some(builtins));
    }
}
