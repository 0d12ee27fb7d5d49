// The call console as a standalone element (tests mount it alone); the component is
// ../components/Console.svelte.
import { flushSync, mount } from "svelte";
import type { Api } from "../api";
import type { ToolListing } from "../bindings/ToolListing";
import ConsoleView from "../components/Console.svelte";

export interface Console {
  element: HTMLElement;
  setTools(tools: readonly ToolListing[]): void;
}

/** `onFinished` runs after every call ends (recorded or failed), e.g. to refresh the history. */
export function createConsole(api: Api, onFinished: () => void = () => {}): Console {
  const element = document.createElement("div");
  element.className = "console-host";
  const instance = mount(ConsoleView, { target: element, props: { api, onfinished: onFinished } }) as {
    setTools(tools: readonly ToolListing[]): void;
  };
  flushSync();
  return {
    element,
    setTools: (tools) => {
      instance.setTools(tools);
      flushSync();
    },
  };
}
