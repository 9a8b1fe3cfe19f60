// A JSON Schema validator for the keywords the SDK tests use (type, properties, required,
// items, minItems/maxItems, maxLength, enum), independent of the server's schema compiler.
// Throws an Error naming the JSON path and the rule that failed.
export function validate(schema, v, path = '$') {
  const fail = (what) => { throw new Error(`${path}: ${what}: ${JSON.stringify(v)}`); };
  if (schema.enum) { if (!schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) fail('not in enum'); return; }
  switch (schema.type) {
    case 'object': {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) fail('not an object');
      for (const k of schema.required ?? []) if (!(k in v)) fail(`missing required '${k}'`);
      for (const [k, x] of Object.entries(v)) {
        if (!(k in (schema.properties ?? {}))) fail(`unexpected property '${k}'`);
        validate(schema.properties[k], x, `${path}.${k}`);
      }
      return;
    }
    case 'array':
      if (!Array.isArray(v)) fail('not an array');
      if (v.length < (schema.minItems ?? 0) || v.length > (schema.maxItems ?? Infinity)) fail('item count');
      v.forEach((x, i) => validate(schema.items, x, `${path}[${i}]`));
      return;
    case 'string':
      if (typeof v !== 'string') fail('not a string');
      if ([...v].length > (schema.maxLength ?? Infinity)) fail('too long');
      return;
    case 'integer': if (!Number.isInteger(v)) fail('not an integer'); return;
    case 'number': if (typeof v !== 'number') fail('not a number'); return;
    case 'boolean': if (typeof v !== 'boolean') fail('not a boolean'); return;
    case 'null': if (v !== null) fail('not null'); return;
    default: fail(`schema type ${schema.type}`);
  }
}
