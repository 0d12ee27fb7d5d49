// xterm.js writes its renderer CSS into <style> elements, which the app's CSP (`style-src 'self'`,
// no 'unsafe-inline') blocks. This mirrors the text of <style> elements created INSIDE one host
// element (our own terminal, never untrusted markup: the UI inserts untrusted text as text only and
// sanitized Markdown has no <style>) into a constructed stylesheet, which the CSP does not govern.

/** Starts mirroring; returns the stop function. */
export function mirrorScopedStyles(host: HTMLElement): () => void {
  if (typeof CSSStyleSheet === "undefined" || !("adoptedStyleSheets" in document)) return () => {};
  const sheets = new Map<HTMLStyleElement, { sheet: CSSStyleSheet; text: string | null }>();
  const sync = () => {
    const seen = new Set<HTMLStyleElement>();
    for (const el of host.querySelectorAll("style")) {
      seen.add(el);
      let entry = sheets.get(el);
      if (!entry) {
        entry = { sheet: new CSSStyleSheet(), text: null };
        sheets.set(el, entry);
        document.adoptedStyleSheets = [...document.adoptedStyleSheets, entry.sheet];
      }
      const text = el.textContent ?? "";
      if (text === entry.text) continue;
      entry.text = text;
      try {
        entry.sheet.replaceSync(text);
      } catch {
        // A rule the engine rejects leaves the previous rules in place.
      }
    }
    for (const [el, entry] of sheets) {
      if (seen.has(el)) continue;
      sheets.delete(el);
      document.adoptedStyleSheets = document.adoptedStyleSheets.filter((s) => s !== entry.sheet);
    }
  };
  // The terminal re-renders its rows constantly: react only to mutations that touch a <style>.
  const touchesStyle = (record: MutationRecord): boolean => {
    const isStyle = (node: Node | null) => node !== null && node.nodeName === "STYLE";
    if (isStyle(record.target) || isStyle(record.target.parentNode)) return true;
    for (const node of record.addedNodes) if (isStyle(node)) return true;
    for (const node of record.removedNodes) if (isStyle(node)) return true;
    return false;
  };
  const observer = new MutationObserver((records) => {
    if (records.some(touchesStyle)) sync();
  });
  observer.observe(host, { subtree: true, childList: true, characterData: true });
  sync();
  return () => {
    observer.disconnect();
    const mine = new Set([...sheets.values()].map((e) => e.sheet));
    document.adoptedStyleSheets = document.adoptedStyleSheets.filter((s) => !mine.has(s));
    sheets.clear();
  };
}
