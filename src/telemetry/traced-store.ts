/**
 * A {@link CheckpointStore} decorator that traces and times every operation: one span per call,
 * `ttc.store <method>` (kind CLIENT, `db.system.name` / `db.system` when the store is one of ours,
 * `db.operation.name` = the method), a child of whatever span is active (the fence's
 * `execute_tool` span); its latency on `ttc_store_operation_latency`; a compare-and-swap that
 * finds the record changed on `ttc_cas_conflicts`. No key, record, argument or result goes into a
 * span. Results and errors pass through unchanged (the span records the CheckpointError code as
 * `error.type`); telemetry that throws is ignored (`./isolated`).
 *
 * It delegates to the wrapped store instance, so the records it returns are that instance's
 * (what `compareAndSwap`'s `expected` requires).
 */
import { SpanKind, type Tracer } from '@opentelemetry/api';
import type { Binding, CheckpointRecord, JsonValue, Status } from '../checkpoint/types';
import type {
  CheckpointStore,
  ConversationEntry,
  CreateOptions,
  CreateResult,
  GroupWrite,
  GroupWriteResult,
  ListOptions,
  ListQuarantinedOptions,
  PruneOptions,
  QuarantinedRow,
} from '../stores/checkpoint-store';
import { DB, TTC } from './attributes';
import { errorType } from './error-type';
import type { FenceMetrics } from './fence-metrics';
import { isolated, IsolatedSpan } from './isolated';

/** Options of {@link tracedStore}. */
export interface TracedStoreOptions {
  readonly tracer: Tracer;
  readonly metrics: FenceMetrics;
  /** Called with every record the store returns or a successful compare-and-swap wrote, in order. */
  readonly onRecord?: (record: CheckpointRecord) => void;
}

/**
 * `store` with every operation traced and timed (see the module docs). `close()` is passed
 * through untraced.
 */
export function tracedStore(store: CheckpointStore, options: TracedStoreOptions): CheckpointStore {
  return new TracedCheckpointStore(store, options);
}

/**
 * The `db.system.name` of a store: `sqlite` or `postgresql` for this package's stores, undefined
 * for any other implementation (a wrapper or a user's own store). Read from the class name, since
 * the {@link CheckpointStore} interface does not say which database it uses.
 */
export function dbSystemOf(store: CheckpointStore): 'sqlite' | 'postgresql' | undefined {
  const name = (store as { constructor?: { name?: unknown } }).constructor?.name;
  if (name === 'SqliteCheckpointStore') return 'sqlite';
  if (name === 'PostgresCheckpointStore') return 'postgresql';
  return undefined;
}

class TracedCheckpointStore implements CheckpointStore {
  private readonly dbSystem: string | undefined;

  constructor(
    private readonly store: CheckpointStore,
    private readonly options: TracedStoreOptions,
  ) {
    this.dbSystem = dbSystemOf(store);
  }

  createIfAbsent(record: CheckpointRecord, options?: CreateOptions): Promise<CreateResult> {
    return this.traced(
      'createIfAbsent',
      () => this.store.createIfAbsent(record, options),
      (result, span) => {
        span.setAttribute(TTC.CREATED, result.created);
        this.seen(result.record);
      },
    );
  }

  releaseDedupeKey(holder: CheckpointRecord): Promise<boolean> {
    return this.traced(
      'releaseDedupeKey',
      () => this.store.releaseDedupeKey(holder),
      () => undefined,
    );
  }

  get(binding: Binding): Promise<CheckpointRecord | null> {
    return this.traced(
      'get',
      () => this.store.get(binding),
      (record) => this.seen(record),
    );
  }

  getByCall(namespace: string, callId: string): Promise<CheckpointRecord | null> {
    return this.traced(
      'getByCall',
      () => this.store.getByCall(namespace, callId),
      (record) => this.seen(record),
    );
  }

  compareAndSwap(expectedRevision: number, next: CheckpointRecord, expected?: CheckpointRecord): Promise<boolean> {
    return this.traced(
      'compareAndSwap',
      () => this.store.compareAndSwap(expectedRevision, next, expected),
      (swapped, span) => {
        span.setAttribute(TTC.CAS_SWAPPED, swapped);
        if (swapped) this.seen(next);
        else this.options.metrics.casConflict();
      },
    );
  }

  getMany(bindings: readonly Binding[]): Promise<(CheckpointRecord | null)[]> {
    return this.traced(
      'getMany',
      () => this.store.getMany(bindings),
      (records) => {
        for (const record of records) this.seen(record);
      },
    );
  }

  /** One span for the group; each created record and swapped `next` is seen, each lost compare-and-swap counted as a conflict. */
  writeGroup(writes: readonly GroupWrite[]): Promise<GroupWriteResult[]> {
    return this.traced(
      'writeGroup',
      () => this.store.writeGroup(writes),
      (results) => {
        results.forEach((result, i) => {
          const write = writes[i];
          if (result.kind === 'create') this.seen(result.record);
          else if (result.swapped && write?.kind === 'cas') this.seen(write.next);
          else this.options.metrics.casConflict();
        });
      },
    );
  }

  listByStatus(statuses: readonly Status[], options?: ListOptions): Promise<CheckpointRecord[]> {
    return this.traced('listByStatus', () => this.store.listByStatus(statuses, options));
  }

  listQuarantined(options?: ListQuarantinedOptions): Promise<QuarantinedRow[]> {
    return this.traced('listQuarantined', () => this.store.listQuarantined(options));
  }

  prune(options: PruneOptions): Promise<number> {
    return this.traced('prune', () => this.store.prune(options));
  }

  putConversationEntries(logId: string, entries: readonly ConversationEntry[]): Promise<void> {
    return this.traced('putConversationEntries', () => this.store.putConversationEntries(logId, entries));
  }

  getConversationEntries(logId: string, keys: readonly string[]): Promise<JsonValue[]> {
    return this.traced('getConversationEntries', () => this.store.getConversationEntries(logId, keys));
  }

  close(): Promise<void> {
    return this.store.close();
  }

  private seen(record: CheckpointRecord | null): void {
    if (record !== null) isolated('onRecord', () => this.options.onRecord?.(record));
  }

  /** Runs `work` in its span; the telemetry around it is {@link isolated}, so `work`'s value or error passes through unchanged. */
  private async traced<T>(operation: string, work: () => Promise<T>, settled?: (value: T, span: IsolatedSpan) => void): Promise<T> {
    const span = IsolatedSpan.start(this.options.tracer, `ttc.store ${operation}`, {
      kind: SpanKind.CLIENT,
      attributes: { [DB.OPERATION_NAME]: operation, ...(this.dbSystem === undefined ? {} : { [DB.SYSTEM_NAME]: this.dbSystem, [DB.SYSTEM]: this.dbSystem }) },
    });
    const startedAt = performance.now();
    try {
      const value = await work();
      isolated('store span result', () => settled?.(value, span));
      return value;
    } catch (error) {
      span.setError(errorType(error));
      throw error;
    } finally {
      this.options.metrics.storeLatency(operation, performance.now() - startedAt);
      span.end();
    }
  }
}
