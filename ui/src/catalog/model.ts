// Pure view-model of the catalog's servers and skills: labels, what each state offers, filtering.
import type { CatalogServer } from "../bindings/CatalogServer";
import type { CatalogSkill } from "../bindings/CatalogSkill";
import type { ServerView } from "../bindings/ServerView";

export type ServerTone = "ok" | "busy" | "warn" | "bad" | "off";

/** One line for a server's state: a short label, its tone and the detail (an error, say). */
export function serverStatus(server: CatalogServer): { label: string; tone: ServerTone; detail: string | null } {
  const s: ServerView = server.state;
  switch (s.kind) {
    case "connected":
      return { label: `connected · ${server.tool_count} tool${server.tool_count === 1 ? "" : "s"}`, tone: "ok", detail: null };
    case "connecting":
      return { label: "connecting", tone: "busy", detail: null };
    case "reconnecting":
      return { label: `reconnecting (attempt ${s.attempt})`, tone: "busy", detail: s.reason };
    case "failed":
      return {
        label: s.retry_in_ms === null ? "failed" : `failed · retry in ${Math.ceil(s.retry_in_ms / 1000)} s`,
        tone: "bad",
        detail: s.reason,
      };
    case "needs_login":
      return { label: "needs login", tone: "warn", detail: "The server asks for a login before it lists its tools." };
    case "disabled":
      return { label: "disabled", tone: "off", detail: "Disabled in its configuration." };
    case "untrusted":
      return { label: "not started", tone: "warn", detail: "A project server: it starts once you trust the project." };
    case "bad_config":
      return { label: "configuration refused", tone: "bad", detail: s.reason };
  }
}

/**
 * How a server runs: `sandboxed: namespaces+landlock-v7+nonet · network off · writes /a, /b`, or
 * `not sandboxed` (it runs with the person's full authority).
 */
export function sandboxLine(server: CatalogServer): { label: string; sandboxed: boolean } {
  const s = server.sandbox;
  if (s === null) return { label: "not sandboxed", sandboxed: false };
  const how = s.confinement ?? "not started yet";
  const network = s.network === "off" ? "network off" : `network ${s.network}`;
  const writes = s.writable_roots.length === 0 ? "writes only its temp dir" : `writes ${s.writable_roots.join(", ")}`;
  const more = s.refused_more > 0 ? ` and ${s.refused_more} more` : "";
  const refused = s.refused_hosts.length === 0 ? "" : ` · refused ${s.refused_hosts.join(", ")}${more}`;
  return { label: `sandboxed: ${how} · ${network} · ${writes}${refused}`, sandboxed: true };
}

/** Reconnect is offered where a running supervisor can be restarted. */
export function canReconnect(server: CatalogServer): boolean {
  return ["connected", "connecting", "reconnecting", "failed", "needs_login"].includes(server.state.kind);
}

export function needsLogin(server: CatalogServer): boolean {
  return server.state.kind === "needs_login";
}

function matches(q: string, ...fields: (string | null | undefined)[]): boolean {
  return fields.some((f) => (f ?? "").toLowerCase().includes(q));
}

export function filterServers(servers: readonly CatalogServer[], query: string): CatalogServer[] {
  const q = query.trim().toLowerCase();
  if (q === "") return [...servers];
  return servers.filter((s) => matches(q, s.name, s.server_info, serverStatus(s).label));
}

export function filterSkills(skills: readonly CatalogSkill[], query: string): CatalogSkill[] {
  const q = query.trim().toLowerCase();
  if (q === "") return [...skills];
  return skills.filter((s) => matches(q, s.name, s.description, s.root));
}
