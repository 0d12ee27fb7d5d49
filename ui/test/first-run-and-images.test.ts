// A first run that says what to do (no model set up: the Providers page, and a local server that
// answered, used through the person's own settings), and the images a call sent to the model
// shown on its card, from the store as data URLs, never from a URL a tool wrote.
import { flushSync, mount, unmount } from "svelte";
import { afterEach, describe, expect, it } from "vitest";
import type { CallImage } from "../src/bindings/CallImage";
import type { LocalServer } from "../src/bindings/LocalServer";
import type { ModelSetup as Setup } from "../src/bindings/ModelSetup";
import type { SettingsWrite } from "../src/bindings/SettingsWrite";
import ModelSetup from "../src/components/run/ModelSetup.svelte";
import ToolCardView from "../src/components/run/ToolCardView.svelte";
import type { RunEvent } from "../src/provisional/run-types";
import { createModelSetupApi, type ModelSetupApi } from "../src/project/model-setup";
import { createLoadImages, namesImages } from "../src/run/images";
import { OutputBus } from "../src/run/output-bus";
import { applyRunEvent, emptyRun, type ToolCard } from "../src/run/state";

const tick = () => new Promise((r) => setTimeout(r, 0));
let cleanup: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanup) c();
  cleanup = [];
});

function host(): HTMLElement {
  const h = document.createElement("div");
  document.body.append(h);
  cleanup.push(() => h.remove());
  return h;
}

const OLLAMA: LocalServer = { id: "ollama", name: "Ollama", base_url: "http://127.0.0.1:11434/v1", models: ["qwen3:8b", "llama3.2"] };
const WRITTEN: SettingsWrite = {
  written: { file: "/d/settings.json", changed: true, trust: { kind: "not_concerned" } },
  problems: [],
} as unknown as SettingsWrite;

function fakeSetup(setup: Setup, used: [LocalServer, string][] = []): ModelSetupApi {
  return {
    modelSetup: async () => setup,
    useLocal: async (server, model) => {
      used.push([server, model]);
      return WRITTEN;
    },
  };
}

describe("the first run with no model set up", () => {
  it("says so, offers the Providers page and a local server that answered, and uses the chosen model", async () => {
    const used: [LocalServer, string][] = [];
    let providers = 0;
    const configured: string[] = [];
    const h = host();
    const c = mount(ModelSetup, {
      target: h,
      props: {
        api: fakeSetup({ needs_setup: true, local_servers: [OLLAMA, { ...OLLAMA, id: "llamacpp", name: "llama.cpp server", models: [] }] }, used),
        onproviders: () => providers++,
        onconfigured: (e: string) => configured.push(e),
      },
    });
    cleanup.push(() => unmount(c));
    await tick();
    flushSync();
    expect(h.querySelector('[data-testid="model-setup-title"]')?.textContent).toBe("No model is set up");
    (h.querySelector('[data-testid="model-setup-providers"]') as HTMLButtonElement).click();
    expect(providers).toBe(1);
    const rows = [...h.querySelectorAll('[data-testid="local-server"]')];
    expect(rows.map((r) => r.getAttribute("data-id"))).toEqual(["ollama", "llamacpp"]);
    const [ollama, llamacpp] = rows as [Element, Element];
    expect(ollama.textContent).toContain("Ollama answers at http://127.0.0.1:11434/v1");
    expect(llamacpp.querySelector('[data-testid="local-server-empty"]')).not.toBeNull();
    const select = ollama.querySelector("select") as HTMLSelectElement;
    select.value = "llama3.2";
    select.dispatchEvent(new Event("change", { bubbles: true }));
    (ollama.querySelector('[data-testid="local-server-use"]') as HTMLButtonElement).click();
    await tick();
    expect(used).toEqual([[OLLAMA, "llama3.2"]]);
    expect(configured).toEqual(["ollama"]);
  });

  it("says nothing when a model can run", async () => {
    const h = host();
    const c = mount(ModelSetup, { target: h, props: { api: fakeSetup({ needs_setup: false, local_servers: [] }), onproviders: () => {}, onconfigured: () => {} } });
    cleanup.push(() => unmount(c));
    await tick();
    flushSync();
    expect(h.querySelector('[data-testid="model-setup"]')).toBeNull();
  });

  it("writes the entry to the person's own settings, then makes it the default", async () => {
    const calls: [string, unknown][] = [];
    const api = createModelSetupApi(async <T,>(cmd: string, args?: Record<string, unknown>) => {
      calls.push([cmd, args]);
      return WRITTEN as T;
    });
    await api.useLocal(OLLAMA, "qwen3:8b");
    expect(calls).toEqual([
      ["set_setting", { level: "user", path: ["providers", "ollama"], value: { kind: "openai-chat", base_url: "http://127.0.0.1:11434/v1", model: "qwen3:8b" } }],
      ["set_setting", { level: "user", path: ["providers", "default"], value: "ollama" }],
    ]);
  });
});

function imageCard(model: string): ToolCard {
  const events: RunEvent[] = [
    { type: "tool_call", tool_call_id: "c9", tool: "read_file", input: { path: "a.png" } },
    { type: "tool_result", tool_call_id: "c9", status: "ok", stage: null, model, duration_ms: 3, exit_code: null, omitted_bytes: null, activated: [], hooks: [] },
  ];
  let s = emptyRun();
  for (const e of events) s = applyRunEvent(s, e, 1000);
  const item = s.items.find((i) => i.kind === "tool");
  if (!item || item.kind !== "tool") throw new Error("no card");
  return item.card;
}

const PNG: CallImage = { media_type: "image/png", width: 3, height: 2, data_url: "data:image/png;base64,iVBORw0KGgo=" };

describe("a command card's sandbox", () => {
  it("says which container the command ran in, as text; a local command's card says nothing", () => {
    const where = "container 0123456789ab (image `<b>x</b>`) on unix:///run/podman/podman.sock";
    const cardOf = (sandbox?: string): ToolCard => {
      let s = emptyRun();
      s = applyRunEvent(s, { type: "tool_call", tool_call_id: "c1", tool: "execute", input: { command: "make" } }, 1000);
      const result: RunEvent = { type: "tool_result", tool_call_id: "c1", status: "ok", stage: null, model: "", duration_ms: 3, exit_code: 0, omitted_bytes: null, activated: [], hooks: [] };
      s = applyRunEvent(s, sandbox === undefined ? result : { ...result, sandbox }, 1000);
      const item = s.items.find((i) => i.kind === "tool");
      if (!item || item.kind !== "tool") throw new Error("no card");
      return item.card;
    };
    const h = host();
    const c = mount(ToolCardView, { target: h, props: { card: cardOf(where), bus: new OutputBus(), onstop: () => {} } });
    cleanup.push(() => unmount(c));
    flushSync();
    const line = h.querySelector('[data-testid="tool-sandbox"]');
    expect(line?.textContent).toBe(`ran in ${where}`);
    expect(line?.querySelector("b")).toBeNull();
    const h2 = host();
    const c2 = mount(ToolCardView, { target: h2, props: { card: cardOf(), bus: new OutputBus(), onstop: () => {} } });
    cleanup.push(() => unmount(c2));
    flushSync();
    expect(h2.querySelector('[data-testid="tool-sandbox"]')).toBeNull();
  });
});

describe("a card's images", () => {
  it("are asked by call id when the model text names one, and shown sized", async () => {
    const asked: string[] = [];
    const h = host();
    const card = imageCard("[a.png: 2.0 KB; sent as an image]\n[image 1: image/png, 3x2]\n");
    const c = mount(ToolCardView, {
      target: h,
      props: { card, bus: new OutputBus(), onstop: () => {}, loadImages: async (id: string) => (asked.push(id), [PNG]) },
    });
    cleanup.push(() => unmount(c));
    await tick();
    flushSync();
    expect(asked).toEqual(["c9"]);
    const img = h.querySelector('[data-testid="tool-image"]') as HTMLImageElement;
    expect(img.getAttribute("src")).toBe(PNG.data_url);
    expect([img.getAttribute("width"), img.getAttribute("height")]).toEqual(["3", "2"]);
  });

  it("are not asked for a call whose text names none", async () => {
    const asked: string[] = [];
    const h = host();
    const c = mount(ToolCardView, {
      target: h,
      props: { card: imageCard("hello"), bus: new OutputBus(), onstop: () => {}, loadImages: async (id: string) => (asked.push(id), [PNG]) },
    });
    cleanup.push(() => unmount(c));
    await tick();
    expect(asked).toEqual([]);
    expect(h.querySelector('[data-testid="tool-image"]')).toBeNull();
  });

  it("only data URLs of the four image types pass, whatever the shell answers", async () => {
    expect(namesImages("[image 2: image/jpeg, 640x480, scaled down from 4000x3000]")).toBe(true);
    expect(namesImages("[image content, image/png, 12 base64 chars]")).toBe(false);
    const load = createLoadImages(async <T,>() =>
      [PNG, { ...PNG, data_url: "https://evil.example/x.png" }, { ...PNG, data_url: "data:image/svg+xml;base64,PHN2Zz4=" }] as T,
    );
    expect(await load("c1")).toEqual([PNG]);
  });
});
