// The approval mode and the confirmation's rule offer, over the shell's commands. The mode is
// chosen by the person and kept at the user level for the project; the offered rule is computed
// by the shell from the pending request itself (the web view only shows it and says yes).
import { invoke } from "@tauri-apps/api/core";
import { ApiError, type InvokeFn, toCommandError } from "../api";
import type { ApprovalMode } from "../bindings/ApprovalMode";
import type { ApprovalsView } from "../bindings/ApprovalsView";
import type { ConfirmOffer } from "../bindings/ConfirmOffer";

export const APPROVAL_COMMANDS = {
  approvalsView: "approvals_view",
  setApprovalMode: "set_approval_mode",
  confirmOffer: "confirm_offer",
  answerConfirmWithRule: "answer_confirm_with_rule",
} as const;

export interface ApprovalsApi {
  approvalsView(): Promise<ApprovalsView>;
  setApprovalMode(mode: ApprovalMode): Promise<ApprovalsView>;
  /** The rule the pending confirmation of `callId` offers, if any. */
  confirmOffer(callId: string): Promise<ConfirmOffer | null>;
  /** Approves `callId` once and stores its offered rule for later calls of this project. */
  answerConfirmWithRule(callId: string): Promise<boolean>;
}

export function createApprovalsApi(call: InvokeFn = invoke): ApprovalsApi {
  const run = async <T>(cmd: string, args?: Record<string, unknown>): Promise<T> => {
    try {
      return await call<T>(cmd, args);
    } catch (error) {
      throw new ApiError(toCommandError(error));
    }
  };
  return {
    approvalsView: () => run<ApprovalsView>(APPROVAL_COMMANDS.approvalsView),
    setApprovalMode: (mode) => run<ApprovalsView>(APPROVAL_COMMANDS.setApprovalMode, { mode }),
    confirmOffer: (callId) => run<ConfirmOffer | null>(APPROVAL_COMMANDS.confirmOffer, { callId }),
    answerConfirmWithRule: (callId) => run<boolean>(APPROVAL_COMMANDS.answerConfirmWithRule, { callId }),
  };
}
