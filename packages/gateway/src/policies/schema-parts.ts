import { type ArrayOptions, Type } from '@sinclair/typebox';

/** JSON Schema fragments shared by the policies' param schemas. */
export const stringList = (options?: ArrayOptions) =>
  Type.Array(Type.String({ minLength: 1 }), options);

/** Object options: unknown parameters are refused. */
export const closed = { additionalProperties: false } as const;
