// The state of one MCP elicitation form, apart from its dialog (./ElicitationDialog.svelte, which
// renders it and owns focus and keys): the fields the restricted schema describes (./form-model.ts),
// the values as typed, the problems (shown once a send was refused, then kept current as the
// person types), and the one answer the dialog gives: Send (accept, with the content), Decline or
// Cancel. A schema outside what the spec allows has no fields; only Decline and Cancel answer.
import type { HumanAnswer } from "../../bindings/HumanAnswer";
import type { ElicitationRequest } from "../../run/state";
import { type FormField, type FormModel, type FormValues, formContent, formModel } from "./form-model";

export class ElicitationForm {
  readonly model: FormModel;
  readonly fields: FormField[];
  // Input state by kind (text and numbers as typed, checkboxes, picked options).
  texts: Record<string, string> = $state({});
  checks: Record<string, boolean> = $state({});
  picks: Record<string, string[]> = $state({});
  /** A send was tried (problems show from then on). */
  tried = $state(false);
  /** The answer was given: every button waits. */
  sent = $state(false);
  /** Each field's problem, once a send was refused. */
  readonly errors: Record<string, string> = $derived.by(() => {
    if (!this.tried) return {};
    const result = formContent(this.fields, this.values());
    return result.ok ? {} : result.errors;
  });

  constructor(
    private readonly request: ElicitationRequest,
    private readonly onanswer: (id: string, answer: HumanAnswer) => void,
  ) {
    this.model = formModel(request.schema);
    this.fields = this.model.ok ? this.model.fields : [];
    for (const f of this.fields) {
      if (f.kind === "boolean") this.checks[f.name] = f.initial;
      else if (f.kind === "multi") this.picks[f.name] = [...f.initial];
      else this.texts[f.name] = f.initial;
    }
  }

  values(): FormValues {
    return { ...this.texts, ...this.checks, ...this.picks };
  }

  /** Sends the content when every field is valid; "refused" when a field is not (nothing sent). */
  send(): "sent" | "refused" | "ignored" {
    if (this.sent || !this.model.ok) return "ignored";
    this.tried = true;
    const result = formContent(this.fields, this.values());
    if (!result.ok) return "refused";
    this.sent = true;
    this.onanswer(this.request.elicitation_id, { kind: "form", content: result.content });
    return "sent";
  }

  answer(kind: "declined" | "cancelled"): void {
    if (this.sent) return;
    this.sent = true;
    this.onanswer(this.request.elicitation_id, { kind });
  }
}
