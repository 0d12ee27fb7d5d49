/// <reference types="vitest/config" />
// Vite builds the web UI (Svelte 5 components, TypeScript) from ui/ into ui/dist (embedded by
// release-style builds of the shell, see tauri.conf.json `build.frontendDist`); vitest runs the UI
// unit and component tests under happy-dom. Component CSS is emitted as files (never inline), so
// the strict CSP (`style-src 'self'`) holds.
import { svelte } from "@sveltejs/vite-plugin-svelte";
import { defineConfig } from "vite";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  root,
  plugins: [svelte({ emitCss: true })],
  // Keep Vite's and vitest's caches out of ui/ (the repo's node_modules is at the root).
  cacheDir: "../node_modules/.vite",
  clearScreen: false,
  server: { port: 5173, strictPort: true },
  // vitest mounts components in happy-dom: use Svelte's client build, not its server renderer.
  resolve: process.env.VITEST ? { conditions: ["browser"] } : undefined,
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "safari15",
    sourcemap: false,
    // Never inline assets as data: URLs into CSS/JS (fonts/images stay files under 'self').
    assetsInlineLimit: 0,
    // xterm.js is most of the bundle; one local file, no network: no need to split.
    chunkSizeWarningLimit: 900,
  },
  test: {
    root,
    environment: "happy-dom",
    include: ["test/**/*.test.ts"],
  },
});
