/**
 * One value of each shared setting for every process on a lock index (settings.ts, SHARED_SETTINGS):
 * an engine takes the values its lock index records, and refuses to work on it when it was given
 * another value explicitly. Checked once per engine, before its first call.
 */
import { StoreRejectedError } from './errors.js';
import { type LockSettings, SHARED_SETTINGS, type SharedSettingName, type SharedSettings } from './settings.js';
import type { LockStore } from './store.js';

/**
 * `own`: the engine's settings as resolved; `given`: the shared settings it was given explicitly. The
 * settings to work with: `own` with the recorded values, or `own` when the store records none.
 */
export async function settleSharedSettings(store: LockStore, own: Readonly<LockSettings>, given: SharedSettings): Promise<Readonly<LockSettings>> {
  if (!store.sharedSettings) return own;
  const { index, recorded } = await store.sharedSettings();
  if (!recorded) return own;
  for (const name of Object.keys(SHARED_SETTINGS) as SharedSettingName[]) {
    const here = given[name];
    const there = recorded[name];
    if (here !== undefined && there !== undefined && here !== there) {
      throw new StoreRejectedError(
        { operation: 'check the shared settings', reason: 'shared_settings_mismatch' },
        `${SHARED_SETTINGS[name]} is ${here} here but the lock index ${index} was made with ${there}: refusing to write (leave it unset to take the lock index's value)`,
      );
    }
  }
  return Object.freeze({ ...own, ...Object.fromEntries(Object.entries(recorded).filter(([, value]) => value !== undefined)) });
}
