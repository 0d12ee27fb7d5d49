// A minimal W3C WebDriver client over plain fetch: just what the window test needs.

export class WebDriver {
  constructor(base) {
    this.base = base.replace(/\/$/, "");
    this.sessionId = null;
  }

  async request(method, path, body) {
    const res = await fetch(`${this.base}${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let json;
    try {
      json = JSON.parse(text);
    } catch {
      throw new Error(`${method} ${path}: HTTP ${res.status}, not JSON: ${text.slice(0, 300)}`);
    }
    if (!res.ok || (json.value && json.value.error)) {
      const err = json.value || {};
      const error = new Error(`${method} ${path}: ${err.error || res.status}: ${err.message || text.slice(0, 300)}`);
      error.webdriverError = err.error;
      throw error;
    }
    return json.value;
  }

  /** Resolves once the driver answers /status, or rejects after `timeoutMs`. */
  async waitReady(timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    let last;
    while (Date.now() < deadline) {
      try {
        await this.request("GET", "/status");
        return;
      } catch (error) {
        last = error;
        await sleep(200);
      }
    }
    throw new Error(`WebDriver at ${this.base} did not answer within ${timeoutMs} ms: ${last?.message}`);
  }

  async newSession(capabilities) {
    const value = await this.request("POST", "/session", { capabilities: { alwaysMatch: capabilities } });
    this.sessionId = value.sessionId;
    return value;
  }

  async deleteSession() {
    if (!this.sessionId) return;
    const id = this.sessionId;
    this.sessionId = null;
    await this.request("DELETE", `/session/${id}`);
  }

  s(path) {
    return `/session/${this.sessionId}${path}`;
  }

  /** Element references for a CSS selector (empty when none match). */
  async findAll(css) {
    const list = await this.request("POST", this.s("/elements"), { using: "css selector", value: css });
    return list.map((el) => Object.values(el)[0]);
  }

  /** Runs `script` (a function body; `arguments` holds `args`) in the page and returns its result. */
  async execute(script, args = []) {
    return this.request("POST", this.s("/execute/sync"), { script, args });
  }

  /**
   * textContent of every element matching `css`. Read through a script: WebKitWebDriver's
   * Get Element Text answers "" for visible elements under Xvfb.
   */
  async texts(css) {
    return this.execute("return [...document.querySelectorAll(arguments[0])].map((el) => el.textContent.trim());", [css]);
  }

  async click(elementId) {
    return this.request("POST", this.s(`/element/${elementId}/click`), {});
  }

  async attribute(elementId, name) {
    return this.request("GET", this.s(`/element/${elementId}/attribute/${encodeURIComponent(name)}`));
  }

  async title() {
    return this.request("GET", this.s("/title"));
  }

  /** Base64 PNG of the page, or null when the driver does not answer within `timeoutMs`. */
  async screenshot(timeoutMs = 15_000) {
    return Promise.race([this.request("GET", this.s("/screenshot")), sleep(timeoutMs).then(() => null)]);
  }

  /** Polls `probe` until it returns a truthy value; the UI loads its data asynchronously. */
  async poll(what, probe, timeoutMs = 30_000) {
    const deadline = Date.now() + timeoutMs;
    let last;
    while (Date.now() < deadline) {
      try {
        const value = await probe();
        if (value) return value;
      } catch (error) {
        last = error;
      }
      await sleep(250);
    }
    throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last.message}` : ""}`);
  }
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
