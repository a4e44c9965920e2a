/**
 * The run search attributes (`TtcNeedsPerson` Bool, `TtcWaitingCalls` KeywordList; defined in
 * src/workflows/agent/search-attributes.ts) on the namespace side (Node side): whether a namespace has
 * them registered (read once per client through the operator service), registering them on an
 * existing server, and the `temporal` CLI lines that do the same (the dev server's
 * `--search-attribute` arguments, `temporal operator search-attribute create` for other servers).
 *
 * @see docs/visibility.md
 */
import { isGrpcServiceError, type Client, type ConnectionLike } from '@temporalio/client';
import type { SearchAttributeType } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { RUN_SEARCH_ATTRIBUTES } from '../workflows/agent/search-attributes';

const IndexedValueType = temporal.api.enums.v1.IndexedValueType;

/** Each search attribute type as the operator service names it and as the `temporal` CLI does (`--type`, `--search-attribute KEY=TYPE`). */
const TYPES: Readonly<Record<SearchAttributeType, { readonly indexed: temporal.api.enums.v1.IndexedValueType; readonly cli: string }>> = {
  TEXT: { indexed: IndexedValueType.INDEXED_VALUE_TYPE_TEXT, cli: 'Text' },
  KEYWORD: { indexed: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD, cli: 'Keyword' },
  INT: { indexed: IndexedValueType.INDEXED_VALUE_TYPE_INT, cli: 'Int' },
  DOUBLE: { indexed: IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE, cli: 'Double' },
  BOOL: { indexed: IndexedValueType.INDEXED_VALUE_TYPE_BOOL, cli: 'Bool' },
  DATETIME: { indexed: IndexedValueType.INDEXED_VALUE_TYPE_DATETIME, cli: 'Datetime' },
  KEYWORD_LIST: { indexed: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST, cli: 'KeywordList' },
};

/** The gRPC status codes read here (grpc/status.proto). */
const GRPC = { DEADLINE_EXCEEDED: 4, ALREADY_EXISTS: 6, RESOURCE_EXHAUSTED: 8, UNAVAILABLE: 14 } as const;

/** How long the registration check waits for the operator service, ms. */
const CHECK_TIMEOUT_MS = 5_000;

/** gRPC codes of a check that may answer differently next time: not cached. */
const TRANSIENT_CODES: ReadonlySet<number> = new Set([GRPC.UNAVAILABLE, GRPC.DEADLINE_EXCEEDED, GRPC.RESOURCE_EXHAUSTED]);

const checked = new WeakMap<Client, Promise<boolean>>();

/**
 * Whether the client's namespace has both run search attributes registered with their types
 * (`operatorService.listSearchAttributes`). Asked once per client and cached; any error (a
 * time-skipping test server without an operator service, no permission) counts as "not
 * registered", so runs start without them and never upsert. A transient error (UNAVAILABLE,
 * DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED) also answers false but is asked again next time.
 * Never throws.
 */
export function hasRunSearchAttributes(client: Client): Promise<boolean> {
  let answer = checked.get(client);
  if (answer === undefined) {
    answer = readRegistration(client.connection, client.options.namespace).then(
      (registered) => registered,
      (error: unknown) => {
        if (isGrpcServiceError(error) && TRANSIENT_CODES.has(error.code)) checked.delete(client);
        return false;
      },
    );
    checked.set(client, answer);
  }
  return answer;
}

async function readRegistration(connection: ConnectionLike, namespace: string): Promise<boolean> {
  const response = await connection.withDeadline(Date.now() + CHECK_TIMEOUT_MS, () => connection.operatorService.listSearchAttributes({ namespace }));
  const custom = response.customAttributes ?? {};
  return RUN_SEARCH_ATTRIBUTES.every((key) => custom[key.name] === TYPES[key.type].indexed);
}

/**
 * Registers both run search attributes on `namespace` of an existing server
 * (`operatorService.addSearchAttributes`), for servers `ttc dev` did not start. Idempotent: an
 * attribute already registered is fine (ALREADY_EXISTS, or a server that answers OK).
 *
 * @throws the operator service's error otherwise (PERMISSION_DENIED on Temporal Cloud, whose
 *   namespaces are configured in the Cloud UI or with `tcld`; see docs/visibility.md)
 */
export async function registerRunSearchAttributes(connection: ConnectionLike, namespace: string): Promise<void> {
  const searchAttributes = Object.fromEntries(RUN_SEARCH_ATTRIBUTES.map((key) => [key.name, TYPES[key.type].indexed]));
  try {
    await connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
  } catch (error) {
    if (isGrpcServiceError(error) && error.code === GRPC.ALREADY_EXISTS) return;
    throw error;
  }
}

/** `temporal server start-dev` arguments that register both run search attributes on every namespace it creates. */
export function devServerSearchAttributeArgs(): string[] {
  return RUN_SEARCH_ATTRIBUTES.flatMap((key) => ['--search-attribute', `${key.name}=${TYPES[key.type].cli}`]);
}

/** The `temporal operator search-attribute create` commands that register both on another server's `namespace`. */
export function searchAttributeCreateCommands(namespace: string): string[] {
  return RUN_SEARCH_ATTRIBUTES.map((key) => `temporal operator search-attribute create --namespace ${namespace} --name ${key.name} --type ${TYPES[key.type].cli}`);
}
