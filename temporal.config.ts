/**
 * Project configuration (see src/config.ts for every key, its default and its environment
 * variable). Every value here can be overridden from the environment.
 */
import { defineConfig } from './src/config';

export default defineConfig({
  // Connection settings the Temporal way (@temporalio/envconfig): TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
  // TEMPORAL_API_KEY (turns TLS on), TEMPORAL_TLS_* and a TOML profile (TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE,
  // default ~/.config/temporalio/temporal.toml) override the values here. Secrets (the API key) never go here.
  temporal: { address: '127.0.0.1:7233', namespace: 'default', taskQueue: 'agent-tools' },
  // With SQLite the tool heartbeat timeout must be at least 2 × sqliteBusyTimeout.
  store: { url: 'sqlite:.data/checkpoints.db', sqliteBusyTimeout: '5s' },
  // shutdownGrace must be at least the longest tool callDeadlineMs (default 30s) + 5s.
  timeouts: { toolStartToClose: '60s', toolHeartbeat: '10s', modelStartToClose: '120s', shutdownGrace: '45s' },
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 10 },
  payload: { maxPayloadBytes: 65_536 },
  retention: { replayWindow: '7d' },
  // Keys come only from the environment; rotation: the current key writes, the older ones listed as id:key,id:key still read.
  keys: {
    hmacKeyEnv: 'TTC_HMAC_KEY',
    hmacKeyId: 'k1',
    hmacKeysEnv: 'TTC_HMAC_KEYS',
    encryptionKeyEnv: 'TTC_ENCRYPTION_KEY',
    encryptionKeyId: 'e1',
    encryptionKeysEnv: 'TTC_ENCRYPTION_KEYS',
  },
});
