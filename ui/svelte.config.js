// Svelte 5 (runes) with TypeScript in <script lang="ts">; read by @sveltejs/vite-plugin-svelte and
// svelte-check.
import { vitePreprocess } from "@sveltejs/vite-plugin-svelte";

export default {
  preprocess: vitePreprocess(),
  compilerOptions: { runes: true },
};
