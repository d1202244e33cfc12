// Unit tests of checkpoint.js, the audit checkpoint rules the extension and
// the viewer share: what is kept, what is a break, what the person reads.
// The host is a scripted `ask`, the kept state a plain object.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sizeOf, checkOnce, describe } from '../checkpoint.js';

// A checkpoint's text as the host signs it: origin, size, root, signature.
const cp = (size, root = 'r') => `nmhost audit\n${size}\n${root}\n\n— nmhost sig\n`;

// memory is a kept state and the record of what was saved into it.
function memory(kept, chain) {
  const m = { state: { kept, chain }, saves: 0 };
  m.load = async () => structuredClone(m.state);
  m.save = async (s) => {
    m.saves++;
    m.state = structuredClone(s);
  };
  return m;
}

// host answers each request type from replies, and keeps what it was asked.
function host(replies) {
  const asked = [];
  const ask = async (type, params) => {
    asked.push({ type, params });
    const r = replies[type];
    if (r === undefined) throw new Error(`the test host was not meant to be asked ${type}`);
    return typeof r === 'function' ? r(params) : r;
  };
  return { ask, asked };
}

test('sizeOf reads exactly a decimal count on the second line', async (t) => {
  for (const [name, text, want] of [
    ['a count', cp(42), 42],
    ['zero', cp(0), 0],
    ['a leading zero', cp('042'), -1],
    ['a sign', cp('-1'), -1],
    ['an exponent', cp('1e3'), -1],
    ['spaces', cp(' 7'), -1],
    ['past a safe integer', cp('9'.repeat(19)), -1],
    ['one line only', 'nmhost audit', -1],
    ['not text', undefined, -1],
  ]) {
    await t.test(name, () => assert.equal(sizeOf(text), want));
  }
});

test('the first check keeps the host\'s checkpoint as the chain\'s start', async () => {
  const m = memory(undefined, undefined);
  const h = host({ 'audit-checkpoint': { success: true, data: { checkpoint: cp(5), size: 5, time: 1000 } } });
  const got = await checkOnce(m, h.ask);
  assert.deepEqual(got, { state: 'consistent', since: 1000, size: 5 });
  assert.deepEqual(m.state, { kept: { checkpoint: cp(5), size: 5, time: 1000, since: 1000 }, chain: { started: 1000 } });
});

test('a proven extension is kept, and the chain keeps its start', async () => {
  const m = memory({ checkpoint: cp(5), size: 5, time: 1000, since: 500 }, { started: 500 });
  const h = host({ 'audit-consistency': { success: true, data: { consistent: true, oldSize: 5, size: 8, checkpoint: cp(8), time: 2000 } } });
  const got = await checkOnce(m, h.ask);
  assert.deepEqual(got, { state: 'consistent', since: 500, size: 8 });
  assert.deepEqual(h.asked, [{ type: 'audit-consistency', params: { checkpoint: cp(5) } }]);
  assert.deepEqual(m.state.kept, { checkpoint: cp(8), size: 8, time: 2000, since: 500 });
});

test('breaks are reported with their code and the kept checkpoint stays', async (t) => {
  const kept = { checkpoint: cp(5), size: 5, time: 1000, since: 500 };
  for (const [name, reply, code] of [
    ['the host proves truncation', { success: false, code: 'audit_truncated', error: 'shorter' }, 'audit_truncated'],
    ['the host proves a rewrite', { success: false, code: 'audit_inconsistent', error: 'rewritten' }, 'audit_inconsistent'],
    ['a bad signature', { success: false, code: 'audit_bad_signature', error: 'sig' }, 'audit_bad_signature'],
    ['"consistent" with a smaller tree', { success: true, data: { consistent: true, oldSize: 5, size: 4, checkpoint: cp(4), time: 2 } }, 'audit_inconsistent'],
    ['"consistent" about another old size', { success: true, data: { consistent: true, oldSize: 3, size: 8, checkpoint: cp(8), time: 2 } }, 'audit_inconsistent'],
    ['"consistent" with a checkpoint that says another size', { success: true, data: { consistent: true, oldSize: 5, size: 8, checkpoint: cp(9), time: 2 } }, 'audit_inconsistent'],
    ['consistent: false', { success: true, data: { consistent: false, oldSize: 5, size: 8, checkpoint: cp(8), time: 2 } }, 'audit_inconsistent'],
    ['no data at all', { success: true }, 'audit_inconsistent'],
  ]) {
    await t.test(name, async () => {
      const m = memory(structuredClone(kept), { started: 500 });
      const got = await checkOnce(m, host({ 'audit-consistency': reply }).ask);
      assert.equal(got.state, 'broken');
      assert.equal(got.code, code);
      assert.equal(got.seenAt, 1000);
      assert.equal(m.saves, 0, 'a break is never written over');
      assert.deepEqual(m.state.kept, kept);
    });
  }
});

test('a kept checkpoint that is spoilt or gone is a break, and the host is not asked', async (t) => {
  for (const [name, kept, chain, code] of [
    ['size not what its text says', { checkpoint: cp(5), size: 6, time: 1 }, { started: 1 }, 'checkpoint_malformed'],
    ['not text', { checkpoint: 5, size: 5, time: 1 }, { started: 1 }, 'checkpoint_malformed'],
    ['a string instead of a record', 'nmhost audit\n5\n', { started: 1 }, 'checkpoint_malformed'],
    ['removed after the chain started', undefined, { started: 1 }, 'checkpoint_missing'],
  ]) {
    await t.test(name, async () => {
      const m = memory(kept, chain);
      const h = host({});
      const got = await checkOnce(m, h.ask);
      assert.equal(got.state, 'broken');
      assert.equal(got.code, code);
      assert.equal(got.seenAt, 1);
      assert.deepEqual(h.asked, []);
      assert.equal(m.saves, 0);
    });
  }
});

test('a host that cannot be asked leaves the check unknown, nothing kept', async (t) => {
  for (const [name, kept, replies, code] of [
    ['no host, first check', undefined, { 'audit-checkpoint': { success: false, code: 'host_unavailable', error: 'gone' } }, 'host_unavailable'],
    ['no host, later check', { checkpoint: cp(5), size: 5, time: 1 }, { 'audit-consistency': { success: false, code: 'timeout', error: 'slow' } }, 'timeout'],
    ['a checkpoint that does not say its size', undefined, { 'audit-checkpoint': { success: true, data: { checkpoint: cp(5), size: 6, time: 1 } } }, 'bad_request'],
  ]) {
    await t.test(name, async () => {
      const m = memory(kept, kept ? { started: 1 } : undefined);
      const got = await checkOnce(m, host(replies).ask);
      assert.equal(got.state, 'unknown');
      assert.equal(got.code, code);
      assert.equal(m.saves, 0);
    });
  }
});

test('a kept checkpoint that changes while the host is asked is checked afresh once, then not overwritten', async () => {
  const m = memory(undefined, undefined);
  let n = 0;
  const h = host({
    'audit-checkpoint': () => {
      // Something else keeps a checkpoint meanwhile, each time.
      m.state = { kept: { checkpoint: cp(++n), size: n, time: n }, chain: { started: 1 } };
      return { success: true, data: { checkpoint: cp(9), size: 9, time: 9 } };
    },
    'audit-consistency': () => {
      m.state = { kept: { checkpoint: cp(++n), size: n, time: n }, chain: { started: 1 } };
      return { success: true, data: { consistent: true, oldSize: n - 1, size: 9, checkpoint: cp(9), time: 9 } };
    },
  });
  const got = await checkOnce(m, h.ask);
  assert.deepEqual(got.state, 'unknown');
  assert.equal(got.code, 'internal_error');
  assert.equal(h.asked.length, 2, 'one check and one more');
  assert.equal(m.saves, 0);
});

test('describe says what a person reads for each outcome', async (t) => {
  const at = 1700000000000;
  const when = new Date(at).toLocaleString();
  for (const [name, outcome, want] of [
    ['consistent', { state: 'consistent', since: at, size: 12 }, `audit trail consistent since ${when} (12 records)`],
    ['truncated', { state: 'broken', code: 'audit_truncated', seenAt: at }, `audit trail broken: the log is shorter than the checkpoint seen at ${when}: records were removed (audit_truncated)`],
    ['missing, time unknown', { state: 'broken', code: 'checkpoint_missing' }, 'audit trail broken: the checkpoint kept since an unknown time is gone from where it was kept (checkpoint_missing)'],
    ['a break code it does not know is not shown as a break', { state: 'broken', code: 'toString', error: 'x' }, 'audit trail not checked: toString: x'],
    ['unknown', { state: 'unknown', code: 'host_unavailable', error: 'gone' }, 'audit trail not checked: host_unavailable: gone'],
    ['nothing', undefined, 'audit trail not checked: internal_error: no answer'],
  ]) {
    await t.test(name, () => assert.equal(describe(outcome), want));
  }
});
