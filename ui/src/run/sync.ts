// The counts line of a container's project sync (the core's `SyncView`, on a command's card and
// the Tools console's result). Pure; the paths are shown by components/run/SyncReport.svelte.
import type { SyncView } from "../bindings/SyncView";
import { formatBytes } from "../lib/format";

/** "4 copied in, 1 removed in the container before; 2 brought back (120 B), 1 deleted here after". */
export function syncCounts(s: SyncView): string {
  return (
    `${s.copied_in} copied in, ${s.removed_in} removed in the container before; ` +
    `${s.brought_back} brought back (${formatBytes(s.brought_back_bytes)}), ${s.deleted} deleted here after`
  );
}
