/** The adapters `ttc worker` can offer, by registry name (its own module: the CLI lists them without loading the model SDKs). */
export const MODEL_ADAPTER_NAMES = ['scripted', 'anthropic', 'openai'] as const;
export type ModelAdapterName = (typeof MODEL_ADAPTER_NAMES)[number];
