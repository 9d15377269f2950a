/** JSON Schema fragments shared by the policies' param schemas. */
export const stringList = { type: 'array', items: { type: 'string', minLength: 1 } };
