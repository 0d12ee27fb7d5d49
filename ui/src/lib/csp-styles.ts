// xterm.js writes its renderer CSS into <style> elements, which the app's CSP (`style-src 'self'`,
// no 'unsafe-inline') blocks. This mirrors the text of <style> elements created INSIDE one host
// element (our own terminal, never untrusted markup: the UI inserts untrusted text as text only and
// sanitized Markdown has no <style>) into a constructed stylesheet, which the CSP does not govern.

/** Starts mirroring; returns the stop function. */
export function mirrorScopedStyles(host: HTMLElement): () => void {
  if (typeof CSSStyleSheet === "undefined" || !("adoptedStyleSheets" in document)) return () => {};
  const sheets = new Map<HTMLStyleElement, CSSStyleSheet>();
  const sync = () => {
    const seen = new Set<HTMLStyleElement>();
    for (const el of host.querySelectorAll("style")) {
      seen.add(el);
      let sheet = sheets.get(el);
      if (!sheet) {
        sheet = new CSSStyleSheet();
        sheets.set(el, sheet);
        document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
      }
      try {
        sheet.replaceSync(el.textContent ?? "");
      } catch {
        // A rule the engine rejects leaves the previous rules in place.
      }
    }
    for (const [el, sheet] of sheets) {
      if (seen.has(el)) continue;
      sheets.delete(el);
      document.adoptedStyleSheets = document.adoptedStyleSheets.filter((s) => s !== sheet);
    }
  };
  const observer = new MutationObserver(sync);
  observer.observe(host, { subtree: true, childList: true, characterData: true });
  sync();
  return () => {
    observer.disconnect();
    const mine = new Set(sheets.values());
    document.adoptedStyleSheets = document.adoptedStyleSheets.filter((s) => !mine.has(s));
    sheets.clear();
  };
}
