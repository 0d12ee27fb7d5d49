// Lets plain `tsc` resolve `.svelte` imports; svelte-check type-checks the components themselves.
declare module "*.svelte" {
  import type { Component } from "svelte";
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const component: Component<any, any, any>;
  export default component;
}
