/** The plugin side of the package (Node only): the plugin class, its options and the call accessor. */
export { ToolCheckpointPlugin, TOOL_CHECKPOINT_PLUGIN_NAME } from './tool-checkpoint-plugin';
export { DEFAULT_PLUGIN_TENANT } from './options';
export type { ToolCheckpointPluginOptions, FencedActivityOptions, FencedLookupContext } from './options';
export { defaultClassifyError } from './error-classification';
export type { ErrorClassifier } from './error-classification';
export { resolveCallInStore, storeResolutionOf, RESOLVED_NOT_APPLIED, RESOLVE_SCAN_LIMIT } from './resolve-in-store';
export type { ResolveCallInStoreArgs, ResolveCallInStoreOptions, ResolvedInStore, ResolvedOutcome, StoreResolution, StoreResolutionAudit } from './resolve-in-store';
export { ToolFenceInboundInterceptor } from './fence-interceptor';
export { fencedCallContext } from './call-context';
export { CALL_HEADER, readCallHeader } from './contract/call-header';
export type { CallHeader } from './contract/call-header';
export type { ActivityCallIdentity } from './call-identity';
export { DESCRIBE_FENCED_CALL_ACTIVITY } from './contract/approval-contract';
export type { ApprovedIntent, DescribeFencedCallInput, FencedCallDescription } from './contract/approval-contract';
export type { GrantVerificationKey } from '../checkpoint/approval-grant';
