import { describe, expect, it } from 'vitest';
import { parseStraceSummary } from '../src/kit/syscalls.js';

describe('strace -c summary', () => {
  it('reads the calls of every system call, with or without an errors column, not the total', () => {
    const summary = `% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 61.43    0.140000           9     14699           writev
 30.01    0.068394           4     16496      2398 read
  8.56    0.019500           2      9702       120 futex
------ ----------- ----------- --------- --------- ----------------
100.00    0.227894                 40897      2518 total
`;
    expect([...parseStraceSummary(summary)]).toEqual([
      ['writev', 14699],
      ['read', 16496],
      ['futex', 9702],
    ]);
  });
});
