import { describe, expect, it } from "vitest";
import { constraintText, type FormField, formContent, formModel, initialValues, MAX_FIELDS } from "../src/components/elicitation/form-model";

function fieldsOf(schema: unknown): FormField[] {
  const model = formModel(schema);
  if (!model.ok) throw new Error(`unsupported: ${model.reason}`);
  return model.fields;
}

function reasonOf(schema: unknown): string {
  const model = formModel(schema);
  if (model.ok) throw new Error("expected an unsupported schema");
  return model.reason;
}

const object = (properties: Record<string, unknown>, required: string[] = []) => ({ type: "object", properties, required });

describe("elicitation schema -> form model", () => {
  it("reads every primitive the spec allows, with titles, descriptions, required and defaults", () => {
    const fields = fieldsOf(
      object(
        {
          name: { type: "string", title: "Your name", description: "Full, legal name", minLength: 2, maxLength: 40 },
          email: { type: "string", format: "email" },
          site: { type: "string", format: "uri" },
          born: { type: "string", format: "date" },
          at: { type: "string", format: "date-time" },
          age: { type: "integer", minimum: 1, maximum: 130, default: 36 },
          ratio: { type: "number", minimum: 0, maximum: 1 },
          agree: { type: "boolean", default: true },
          color: { type: "string", enum: ["r", "g"], enumNames: ["Red", "Green"], default: "g" },
          hero: { type: "string", oneOf: [{ const: "h1", title: "Superman" }, { const: "h2" }] },
          tools: { type: "array", items: { type: "string", enum: ["a", "b", "c"] }, minItems: 1, maxItems: 2, default: ["b", "zz"] },
          fish: { type: "array", items: { anyOf: [{ const: "f1", title: "Tuna" }] } },
        },
        ["name", "tools"],
      ),
    );
    expect(fields.map((f) => [f.name, f.kind, f.required])).toEqual([
      ["name", "text", true],
      ["email", "text", false],
      ["site", "text", false],
      ["born", "text", false],
      ["at", "text", false],
      ["age", "integer", false],
      ["ratio", "number", false],
      ["agree", "boolean", false],
      ["color", "choice", false],
      ["hero", "choice", false],
      ["tools", "multi", true],
      ["fish", "multi", false],
    ]);
    expect(fields[0]).toMatchObject({ label: "Your name", description: "Full, legal name", minLength: 2, maxLength: 40, format: null, initial: "" });
    expect(fields[1]).toMatchObject({ label: "email", format: "email" });
    expect(fields[5]).toMatchObject({ minimum: 1, maximum: 130, initial: "36" });
    expect(fields[7]).toMatchObject({ initial: true });
    expect(fields[8]).toMatchObject({ options: [{ value: "r", label: "Red" }, { value: "g", label: "Green" }], initial: "g" });
    expect(fields[9]).toMatchObject({ options: [{ value: "h1", label: "Superman" }, { value: "h2", label: "h2" }], initial: "" });
    // A default outside the options is dropped.
    expect(fields[10]).toMatchObject({ minItems: 1, maxItems: 2, initial: ["b"] });
    expect(initialValues(fields)).toMatchObject({ name: "", age: "36", agree: true, color: "g", tools: ["b"] });
  });

  it("a form without properties has no fields", () => {
    expect(formModel({ type: "object" })).toEqual({ ok: true, fields: [] });
  });

  it("anything outside the restricted schema is unsupported, saying why", () => {
    expect(reasonOf(null)).toMatch(/not a flat object/);
    expect(reasonOf({ type: "array" })).toMatch(/not a flat object/);
    expect(reasonOf(object({ address: { type: "object", properties: { city: { type: "string" } } } }))).toMatch(/"address" is a nested object/);
    expect(reasonOf(object({ ids: { type: "array", items: { type: "integer" } } }))).toMatch(/"ids" is a list/);
    expect(reasonOf(object({ x: { $ref: "#/$defs/x" } }))).toMatch(/\$ref/);
    expect(reasonOf({ ...object({}), $defs: {} })).toMatch(/\$ref/);
    expect(reasonOf(object({ when: { type: "string", format: "time" } }))).toMatch(/format/);
    expect(reasonOf(object({ n: { type: "null" } }))).toMatch(/type/);
    expect(reasonOf(object({ n: { title: "no type" } }))).toMatch(/type/);
    expect(reasonOf(object({ c: { type: "string", enum: [1, 2] } }))).toMatch(/not a string/);
    expect(reasonOf(object({ c: { type: "string", enum: ["a", "b"], enumNames: ["A"] } }))).toMatch(/inconsistently/);
    expect(reasonOf(object({ a: { type: "string" } }, ["b"]))).toMatch(/required field "b"/);
    expect(reasonOf({ type: "object", properties: {}, required: "a" })).toMatch(/required/);
    const many = Object.fromEntries(Array.from({ length: MAX_FIELDS + 1 }, (_, i) => [`f${i}`, { type: "string" }]));
    expect(reasonOf(object(many))).toMatch(/fields/);
  });
});

describe("elicitation form validation and content", () => {
  const fields = fieldsOf(
    object(
      {
        name: { type: "string", minLength: 2, maxLength: 5 },
        email: { type: "string", format: "email" },
        site: { type: "string", format: "uri" },
        born: { type: "string", format: "date" },
        at: { type: "string", format: "date-time" },
        age: { type: "integer", minimum: 1, maximum: 130 },
        ratio: { type: "number", minimum: 0, maximum: 1 },
        agree: { type: "boolean" },
        color: { type: "string", enum: ["r", "g"] },
        tools: { type: "array", items: { type: "string", enum: ["a", "b", "c"] }, maxItems: 2 },
      },
      ["name", "color"],
    ),
  );

  it("sends typed values, leaves out empty optional fields and keeps the server's option order", () => {
    const result = formContent(fields, { ...initialValues(fields), name: "Ada", age: " 36 ", ratio: "0.5", color: "g", tools: ["c", "a", "c"] });
    expect(result).toEqual({ ok: true, content: { name: "Ada", age: 36, ratio: 0.5, agree: false, color: "g", tools: ["a", "c"] } });
  });

  it("reports required fields and each bound", () => {
    const empty = formContent(fields, initialValues(fields));
    expect(empty).toEqual({ ok: false, errors: { name: "Required.", color: "Choose one." } });
    const bad = formContent(fields, {
      ...initialValues(fields),
      name: "A",
      email: "ada@",
      site: "example.com",
      born: "1990-02-30",
      at: "2026-12-01 09:30",
      age: "3.5",
      ratio: "2",
      color: "x",
      tools: ["a", "b", "c"],
    });
    expect(bad.ok).toBe(false);
    if (bad.ok) return;
    expect(bad.errors).toEqual({
      name: "At least 2 characters.",
      email: expect.stringMatching(/email/),
      site: expect.stringMatching(/https:/),
      born: expect.stringMatching(/YYYY-MM-DD/),
      at: expect.stringMatching(/date and time/),
      age: "Enter a whole number.",
      ratio: "At most 1.",
      color: "Choose one of the options.",
      tools: "Choose at most 2.",
    });
    const more = formContent(fields, { ...initialValues(fields), name: "Adaline", color: "r", age: "0", ratio: "x" });
    expect(more.ok || more.errors).toEqual({ name: "At most 5 characters.", age: "At least 1.", ratio: "Enter a number." });
  });

  it("accepts well-formed formats, counting characters not UTF-16 units", () => {
    const ok = formContent(fields, {
      ...initialValues(fields),
      name: "😀😀",
      email: "ada@example.org",
      site: "https://example.org/a?b=c",
      born: "2024-02-29",
      at: "2026-12-01T09:30:00+01:00",
      color: "r",
    });
    expect(ok).toEqual({
      ok: true,
      content: { name: "😀😀", email: "ada@example.org", site: "https://example.org/a?b=c", born: "2024-02-29", at: "2026-12-01T09:30:00+01:00", agree: false, color: "r" },
    });
  });

  it("a required multiple choice needs one pick, and minItems counts", () => {
    const [multi] = fieldsOf(object({ t: { type: "array", items: { type: "string", enum: ["a", "b"] }, minItems: 2 } }, ["t"]));
    expect(formContent([multi as FormField], { t: [] })).toEqual({ ok: false, errors: { t: "Choose at least 2." } });
    expect(formContent([multi as FormField], { t: ["b", "a"] })).toEqual({ ok: true, content: { t: ["a", "b"] } });
  });

  it("describes constraints in words", () => {
    expect(constraintText(fields[0] as FormField)).toBe("required · 2 to 5 characters");
    expect(constraintText(fields[5] as FormField)).toBe("whole number · 1 to 130");
    expect(constraintText(fields[4] as FormField)).toBe("like 2026-12-01T09:30:00Z");
    expect(constraintText(fields[9] as FormField)).toBe("choose at most 2");
    expect(constraintText(fields[7] as FormField)).toBe("");
  });
});
