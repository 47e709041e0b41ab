//! The one template registry: every handlebars template of the book's views, compiled once,
//! each view rendered by name. A template knows nothing but the view model it is given (any
//! `Serialize`), so this module sits below every view.

use handlebars::Handlebars;
use serde::Serialize;

/// Every template, by the name the others include it by (`{{> chart}}`).
const TEMPLATES: [(&str, &str); 6] = [
    ("lab", include_str!("../templates/lab.hbs")),
    ("chart", include_str!("../templates/chart.hbs")),
    ("chart-paint", include_str!("../templates/chart-paint.hbs")),
    ("diagram", include_str!("../templates/diagram.hbs")),
    ("diagram-svg", include_str!("../templates/diagram-svg.hbs")),
    (
        "gpus-compared",
        include_str!("../templates/gpus-compared.hbs"),
    ),
];

/// The compiled templates.
#[derive(Debug)]
pub struct Templates {
    handlebars: Handlebars<'static>,
}

impl Templates {
    pub fn new() -> Self {
        let mut handlebars = Handlebars::new();
        handlebars.set_strict_mode(true);
        handlebars.register_helper("code", Box::new(code_helper));
        // The templates are part of the binary; a syntax error in one is a bug caught by the tests.
        for (name, text) in TEMPLATES {
            if let Err(err) = handlebars.register_template_string(name, text) {
                panic!("templates/{name}.hbs does not parse: {err}");
            }
        }
        Templates { handlebars }
    }

    /// `view` through the template `name`, without blank lines: markdown ends an HTML block at
    /// the first one, and the chapter must keep each view as one.
    fn render(&self, name: &str, view: &impl Serialize) -> Result<String, handlebars::RenderError> {
        Ok(without_blank_lines(&self.handlebars.render(name, view)?))
    }

    /// A lab's section (`templates/lab.hbs`, its view a `render::LabView`).
    pub fn render_lab(&self, view: &impl Serialize) -> Result<String, handlebars::RenderError> {
        self.render("lab", view)
    }

    /// A diagram's figure (`templates/diagram.hbs`, its view a `diagram::view::DiagramView`).
    pub fn render_diagram(&self, view: &impl Serialize) -> Result<String, handlebars::RenderError> {
        self.render("diagram", view)
    }

    /// The GPUs compared (`templates/gpus-compared.hbs`, its view a
    /// `gpus::view::ComparisonView`).
    pub fn render_comparison(
        &self,
        view: &impl Serialize,
    ) -> Result<String, handlebars::RenderError> {
        self.render("gpus-compared", view)
    }
}

handlebars::handlebars_helper!(code_helper: |text: str| crate::format::code_spans(text));

/// `html` without its blank lines.
fn without_blank_lines(html: &str) -> String {
    html.lines()
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

impl Default for Templates {
    fn default() -> Self {
        Self::new()
    }
}
