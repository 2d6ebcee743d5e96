import { describe, expect, it } from 'vitest';
import { GroupCommit } from '../engine/store/group-commit.ts';
import { JsonText, parseJson, storableJson, stringifyJson, unstorableJson } from '../engine/model/json-text.ts';

/** How deep stored JSON may nest (docs/configuration.md). */
const MAX_JSON_DEPTH = 100;

describe('unstorableJson', () => {
  it('accepts ordinary JSON, escaped backslashes and brackets inside strings', () => {
    expect(unstorableJson('{"a": [1, {"b": "x\\\\u0000 is text, [[[ too"}]}')).toBeUndefined();
    expect(unstorableJson('['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH))).toBeUndefined();
  });

  it('refuses lone surrogates, and accepts pairs and escaped backslashes before a "u"', () => {
    expect(unstorableJson('{"a": "\\ud800"}')).toMatch(/lone surrogate/);
    expect(unstorableJson('{"a": "\\ud800x"}')).toMatch(/lone surrogate/);
    expect(unstorableJson('{"a": "\\udc00"}')).toMatch(/lone surrogate/);
    expect(unstorableJson('{"\\udbff": 1}')).toMatch(/lone surrogate/);
    expect(unstorableJson('{"a": "\\ud83d\\ude00 \\\\ud800"}')).toBeUndefined();
  });

  it('refuses \\u0000 in strings and nesting deeper than the limit', () => {
    expect(unstorableJson('{"a": "x\\u0000"}')).toMatch(/u0000/);
    expect(unstorableJson('{"\\u0000": 1}')).toMatch(/u0000/);
    expect(unstorableJson('['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1))).toMatch(/deeper/);
  });

  it('stores a value with \\u0000 as U+FFFD, and leaves others untouched', () => {
    const clean = { a: 'b', when: new Date(0) };
    expect(storableJson(clean).value).toEqual({ a: 'b', when: '1970-01-01T00:00:00.000Z' });
    expect(storableJson({ a: 'x\u0000y' }).value).toEqual({ a: 'x\ufffdy' });
  });

  it('stores lone surrogates as U+FFFD, keeps pairs and escaped backslashes, refuses what JSON cannot carry', () => {
    expect(storableJson({ a: 'x\ud800y', b: '\udc00', ok: '\ud83d\ude00' }).value).toEqual({
      a: 'x\ufffdy',
      b: '\ufffd',
      ok: '\ud83d\ude00',
    });
    expect(storableJson({ a: '\\u0000 \\ud800' }).value).toEqual({ a: '\\u0000 \\ud800' });
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(() => storableJson(circular)).toThrow(
      expect.objectContaining({ kind: 'permanent', message: expect.stringContaining('circular') }),
    );
    expect(() => storableJson({ n: 1n })).toThrow(expect.objectContaining({ kind: 'permanent' }));
    expect(storableJson(() => 1)).toEqual({ text: 'null', value: null });
  });
});

describe('GroupCommit', () => {
  it('writes concurrent items together, and answers each with its own result', async () => {
    const batches: number[][] = [];
    const commits = new GroupCommit<number, number>(
      async (items) => {
        batches.push(items);
        await new Promise((resolve) => setTimeout(resolve, 5));
        return items.map((item) => item * 10);
      },
      { maxBatch: 50, maxInFlight: 1 },
    );
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => commits.submit(i)));
    expect(results).toEqual(Array.from({ length: 20 }, (_, i) => i * 10));
    expect(batches.length).toBeLessThan(20);
    expect(batches.flat().sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  it('writes each heavy item alone, in turn with groups of the others', async () => {
    const batches: number[][] = [];
    const commits = new GroupCommit<number, number>(
      async (items) => {
        batches.push(items);
        await new Promise((resolve) => setTimeout(resolve, 1));
        return items;
      },
      { maxBatch: 50, maxInFlight: 1, heavy: (item) => item >= 100 },
    );
    await Promise.all([100, 101, 102, 1, 2, 103, 3].map((item) => commits.submit(item)));
    // 100 went at once; then the small ones that waited, a heavy one, the rest, by turns.
    expect(batches).toEqual([[100], [1, 2, 3], [101], [102], [103]]);
  });

  it('fails only the poisoned item of a batch', async () => {
    const commits = new GroupCommit<number, number>(
      async (items) => {
        await new Promise((resolve) => setTimeout(resolve, 1));
        if (items.includes(13)) throw new Error('poison');
        return items;
      },
      { maxBatch: 50, maxInFlight: 1 },
    );
    const outcomes = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => commits.submit(i)));
    expect(outcomes.filter((outcome) => outcome.status === 'rejected')).toHaveLength(1);
    expect(outcomes[13]).toMatchObject({ status: 'rejected', reason: new Error('poison') });
    expect(outcomes[14]).toEqual({ status: 'fulfilled', value: 14 });
  });
});

describe('newId', () => {
  it('makes distinct UUIDv7s that sort by creation time, also within one millisecond', async () => {
    const { newId } = await import('../engine/model/ids.ts');
    const ids = Array.from({ length: 20_000 }, () => newId());
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const before = newId();
    await new Promise((resolve) => setTimeout(resolve, 3));
    expect(newId() > before).toBe(true);
  });
});

describe('parseJson and stringifyJson', () => {
  it('read an integer beyond 2^53 - 1 as its digits, leave every other number and string alone', () => {
    expect(parseJson('{"id": 820982911946154508, "n": [-12345678901234567890, 9007199254740991, 1.5e300]}')).toEqual({
      id: '820982911946154508',
      n: ['-12345678901234567890', 9007199254740991, 1.5e300],
    });
    // Digits inside strings, escaped quotes before them, and decimals stay as they are.
    expect(parseJson('{"s": "\\"820982911946154508", "d": 12345678901234567.5, "k": 1}')).toEqual({
      s: '"820982911946154508',
      d: Number('12345678901234567.5'),
      k: 1,
    });
  });

  it('write a JsonText as its own text, anywhere in a value, and JSON.stringify it as parseJson reads it', () => {
    const body = new JsonText('{"id": 820982911946154508}');
    expect(stringifyJson({ a: [body, 1], b: body, c: 'x' })).toBe(
      '{"a":[{"id": 820982911946154508},1],"b":{"id": 820982911946154508},"c":"x"}',
    );
    expect(JSON.stringify({ body })).toBe('{"body":{"id":"820982911946154508"}}');
  });
});
