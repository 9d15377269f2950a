import { pythonDictRepr, pythonRepr } from '@mcp-identity/arazzo-mcp';
import { describe, expect, it } from 'vitest';

// [JSON text, Python 3.11 repr(json.loads(text))], generated with CPython and pasted here.
const GOLDEN: [string, string][] = [
  ['null', 'None'],
  ['true', 'True'],
  ['false', 'False'],
  ['0', '0'],
  ['-7', '-7'],
  ['42', '42'],
  ['1.5', '1.5'],
  ['-0.25', '-0.25'],
  ['0.1', '0.1'],
  ['1e-05', '1e-05'],
  ['0.0001', '0.0001'],
  ['0.00012345', '0.00012345'],
  ['1.5e-10', '1.5e-10'],
  ['123456.789', '123456.789'],
  ['3.141592653589793', '3.141592653589793'],
  ['1234567890123456.8', '1234567890123456.8'],
  ['""', "''"],
  ['"plain"', "'plain'"],
  ['"it\'s"', '"it\'s"'],
  ['"say \\"hi\\""', '\'say "hi"\''],
  ['"both \' and \\""', "'both \\' and \"'"],
  ['"back\\\\slash"', "'back\\\\slash'"],
  ['"tab\\tnew\\nline\\rcr"', "'tab\\tnew\\nline\\rcr'"],
  ['"\\u0000\\u0001\\u001f\\u007f"', "'\\x00\\x01\\x1f\\x7f'"],
  ['"caf\\u00e9"', "'café'"],
  ['"\\u00a0nbsp"', "'\\xa0nbsp'"],
  ['"zero\\u200bwidth"', "'zero\\u200bwidth'"],
  ['"line\\u2028sep"', "'line\\u2028sep'"],
  ['"\\u3000ideo"', "'\\u3000ideo'"],
  ['"emoji \\ud83d\\ude00"', "'emoji 😀'"],
  ['"\\u00ad soft hyphen"', "'\\xad soft hyphen'"],
  ['"\\ue000 private"', "'\\ue000 private'"],
  ['"\\ud800 lone"', "'\\ud800 lone'"],
  ['"\\u0378 unassigned"', "'\\u0378 unassigned'"],
  ['"\u03a9 \u0416 \u4e2d\u6587"', "'Ω Ж 中文'"],
  ['"\\u0085 nel"', "'\\x85 nel'"],
  ['"\\u009f"', "'\\x9f'"],
  ['[]', '[]'],
  ['{}', '{}'],
  ['[1, "a", null, [true, {}]]', "[1, 'a', None, [True, {}]]"],
  [
    '{"users": [{"id": "u1", "userName": "alice", "name": {"givenName": "O\'Neil"}}], "error": null, "errorStatus": null}',
    "{'users': [{'id': 'u1', 'userName': 'alice', 'name': {'givenName': \"O'Neil\"}}], 'error': None, 'errorStatus': None}",
  ],
  ['{"it\'s": "key with quote"}', "{\"it's\": 'key with quote'}"],
  [
    '{"nested": {"deep": {"list": [1.25, -3, "x"]}}}',
    "{'nested': {'deep': {'list': [1.25, -3, 'x']}}}",
  ],
];

describe('pythonRepr', () => {
  it.each(GOLDEN)('renders %s as Python does', (json, expected) => {
    expect(pythonRepr(JSON.parse(json))).toBe(expected);
  });

  it('renders undefined as None and bytes as a Python bytes literal', () => {
    expect(pythonRepr(undefined)).toBe('None');
    expect(pythonRepr(new Uint8Array([0x61, 0x27, 0x00, 0xff, 0x5c]))).toBe('b"a\'\\x00\\xff\\\\"');
  });

  it('prints integer-valued numbers as Python ints, since JSON 10.0 and 10 are one number here', () => {
    expect(pythonRepr(10.0)).toBe('10');
    expect(pythonRepr(2 ** 60)).toBe('1152921504606846976');
  });

  it('keeps the order of the given entries, even for keys JavaScript objects would reorder', () => {
    expect(
      pythonDictRepr([
        ['b', 1],
        ['1', 2],
      ]),
    ).toBe("{'b': 1, '1': 2}");
  });
});
