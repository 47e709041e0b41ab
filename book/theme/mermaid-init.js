// Renders the book's ```mermaid blocks with a theme that matches mdBook's: the dark mermaid
// theme under ayu, navy and coal, the default one under light and rust. mdBook switches themes
// without a reload, so a switch between a light and a dark theme reloads the page to redraw.
(() => {
    const dark = ['ayu', 'navy', 'coal'];
    const isDark = () => dark.some((theme) => document.documentElement.classList.contains(theme));
    const startedDark = isDark();
    mermaid.initialize({ startOnLoad: true, theme: startedDark ? 'dark' : 'default', securityLevel: 'strict' });
    new MutationObserver(() => {
        if (isDark() !== startedDark) {
            window.location.reload();
        }
    }).observe(document.documentElement, { attributes: true, attributeFilter: ['class'] });
})();
