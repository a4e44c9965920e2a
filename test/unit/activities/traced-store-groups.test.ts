/**
 * The traced store (`src/telemetry/traced-store.ts`) passes `getMany` and `writeGroup`
 * through unchanged, each in one `ttc.store <method>` span with its latency; the records a group
 * wrote reach `onRecord`, a lost compare-and-swap of a group counts on `ttc_cas_conflicts`, and
 * telemetry that throws never changes a result.
 */
import { SpanKind } from '@opentelemetry/api';
import { noopMetricMeter, type MetricMeter, type MetricTags } from '@temporalio/common';
import { fingerprintInput } from '../../../src/checkpoint/digest';
import { createCheckpoint } from '../../../src/checkpoint/record';
import { claimExecution } from '../../../src/checkpoint/transitions';
import type { Binding, CheckpointRecord } from '../../../src/checkpoint/types';
import type { CheckpointStore } from '../../../src/stores/checkpoint-store';
import { openCheckpointStore } from '../../../src/stores/open-checkpoint-store';
import { FenceMetrics } from '../../../src/telemetry/fence-metrics';
import { tracedStore } from '../../../src/telemetry/traced-store';
import { createTestTracing, type TestTracing } from '../../helpers/otel';

const AT = '2030-01-01T00:00:00.000Z';

let tracing: TestTracing;
let inner: CheckpointStore;
const points: Array<{ name: string; tags: MetricTags }> = [];
const meter: MetricMeter = {
  createCounter: (name) => ({ ...noopMetricMeter.createCounter(name), add: (_value: number, tags?: MetricTags) => void points.push({ name, tags: tags ?? {} }) }),
  createHistogram: (name) => ({ ...noopMetricMeter.createHistogram(name), record: (_value: number, tags?: MetricTags) => void points.push({ name, tags: tags ?? {} }) }),
  createGauge: (name) => noopMetricMeter.createGauge(name),
  withTags: () => meter,
};

beforeAll(async () => {
  tracing = createTestTracing();
  inner = await openCheckpointStore('sqlite::memory:');
});

afterAll(async () => {
  await inner.close();
  await tracing.shutdown();
});

function binding(callId: string): Binding {
  return { namespace: 'items', callId, toolName: 'send_notification', toolRevision: '1', inputFingerprint: fingerprintInput({ callId }) };
}

test('getMany and writeGroup: one CLIENT span each, results unchanged, written records seen, a lost compare-and-swap counted; a throwing onRecord changes nothing', async () => {
  const seen: CheckpointRecord[] = [];
  let throwing = false;
  const store = tracedStore(inner, {
    tracer: tracing.tracer,
    metrics: new FenceMetrics(meter),
    onRecord: (record) => {
      if (throwing) throw new Error('telemetry broke');
      seen.push(record);
    },
  });
  const existing = (await inner.createIfAbsent(createCheckpoint(binding('existing'), { createdAt: AT }))).record;
  const won = claimExecution(existing, { attemptId: 'first', at: AT });
  const lost = claimExecution(existing, { attemptId: 'late', at: AT });
  const fresh = createCheckpoint(binding('fresh'), { createdAt: AT });

  const results = await store.writeGroup([
    { kind: 'create', record: fresh },
    { kind: 'cas', expectedRevision: 0, next: won.next, expected: existing },
  ]);
  const second = await store.writeGroup([{ kind: 'cas', expectedRevision: 0, next: lost.next, expected: existing }]);
  throwing = true;
  const read = await store.getMany([binding('fresh'), binding('absent'), binding('existing')]);

  expect(results).toEqual([
    { kind: 'create', created: true, record: fresh },
    { kind: 'cas', swapped: true },
  ]);
  expect(second).toEqual([{ kind: 'cas', swapped: false }]);
  expect(read).toEqual([fresh, null, won.next]);
  expect(seen).toEqual([fresh, won.next]);
  const spans = [...tracing.spans('ttc.store writeGroup'), ...tracing.spans('ttc.store getMany')];
  expect(spans.map((s) => [s.name, s.kind, s.attributes['db.system.name'], s.attributes['db.operation.name']])).toEqual([
    ['ttc.store writeGroup', SpanKind.CLIENT, 'sqlite', 'writeGroup'],
    ['ttc.store writeGroup', SpanKind.CLIENT, 'sqlite', 'writeGroup'],
    ['ttc.store getMany', SpanKind.CLIENT, 'sqlite', 'getMany'],
  ]);
  expect(points.filter((p) => p.name === 'ttc_cas_conflicts')).toHaveLength(1);
  expect(points.filter((p) => p.name === 'ttc_store_operation_latency').map((p) => p.tags.operation)).toEqual(['writeGroup', 'writeGroup', 'getMany']);
});
