/// <reference types="vitest/config" />
// Vite builds the web UI from ui/ into ui/dist (embedded by release-style builds of the shell, see
// tauri.conf.json `build.frontendDist`); vitest runs the UI unit tests under happy-dom.
import { defineConfig } from "vite";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  root,
  // Keep Vite's and vitest's caches out of ui/ (the repo's node_modules is at the root).
  cacheDir: "../node_modules/.vite",
  clearScreen: false,
  server: { port: 5173, strictPort: true },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "safari15",
    sourcemap: false,
  },
  test: {
    root,
    environment: "happy-dom",
    include: ["test/**/*.test.ts"],
  },
});
