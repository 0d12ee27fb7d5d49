// The approval mode and the confirmation's rule offer, over the shell's commands. The mode is
// chosen by the person and kept at the user level for the project; the offered rule is computed
// by the shell from the pending request itself (the web view only shows it and says yes).
import { type InvokeFn, shellCommands } from "../lib/invoke";
import type { ApprovalMode } from "../bindings/ApprovalMode";
import type { ApprovalsView } from "../bindings/ApprovalsView";
import type { ConfirmOffer } from "../bindings/ConfirmOffer";

export interface ApprovalsApi {
  approvalsView(): Promise<ApprovalsView>;
  setApprovalMode(mode: ApprovalMode): Promise<ApprovalsView>;
  /** The rule the pending confirmation of `callId` offers, if any. */
  confirmOffer(callId: string): Promise<ConfirmOffer | null>;
  /** Approves `callId` once and stores its offered rule for later calls of this project. */
  answerConfirmWithRule(callId: string): Promise<boolean>;
}

/** `call`: the raw transport (Tauri's invoke unless a test passes its own). */
export function createApprovalsApi(call?: InvokeFn): ApprovalsApi {
  const c = shellCommands(call);
  return {
    approvalsView: () => c.approvalsView(),
    setApprovalMode: (mode) => c.setApprovalMode({ mode }),
    confirmOffer: (callId) => c.confirmOffer({ callId }),
    answerConfirmWithRule: (callId) => c.answerConfirmWithRule({ callId }),
  };
}
