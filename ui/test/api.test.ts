import { describe, expect, it } from "vitest";
import { ApiError, createApi, toCommandError } from "../src/api";
import { TOOLS } from "./fixtures";

describe("createApi", () => {
  it("invokes the shell's commands by their registered names, with no arguments", async () => {
    const calls: Array<[string, unknown]> = [];
    const api = createApi(async <T>(cmd: string, args?: Record<string, unknown>) => {
      calls.push([cmd, args]);
      return (cmd === "list_tools" ? TOOLS : { root: "/p", data_dir: "/d", settings_files: [], settings_problems: [] }) as T;
    });
    expect(await api.listTools()).toEqual(TOOLS);
    expect(await api.projectInfo()).toEqual({ root: "/p", data_dir: "/d", settings_files: [], settings_problems: [] });
    expect(calls).toEqual([
      ["list_tools", undefined],
      ["project_info", undefined],
    ]);
  });

  it("turns a rejection into an ApiError carrying the shell's typed error", async () => {
    const api = createApi(async () => {
      throw { code: "project", stage: null, message: "settings.json: line 3: unknown field `tols`" };
    });
    const error = await api.listTools().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).detail).toEqual({ code: "project", stage: null, message: "settings.json: line 3: unknown field `tols`" });
  });
});

describe("toCommandError", () => {
  it("keeps typed errors and wraps what Tauri itself rejects with", () => {
    expect(toCommandError({ code: "tool", stage: "Parameters", message: "bad" })).toEqual({ code: "tool", stage: "Parameters", message: "bad" });
    expect(toCommandError("Command list_tools not allowed by ACL")).toEqual({
      code: "ipc",
      stage: null,
      message: "Command list_tools not allowed by ACL",
    });
    expect(toCommandError(new Error("boom"))).toEqual({ code: "ipc", stage: null, message: "boom" });
    expect(toCommandError(42)).toEqual({ code: "ipc", stage: null, message: "42" });
  });
});
