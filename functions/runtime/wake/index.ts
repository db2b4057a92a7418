export type { WakeBody } from './body.js';
export { wakeBody } from './body.js';
export { lazyClients, type WakeClients } from './clients.js';
export { WakeDeliveryError } from './errors.js';
export { WAKE_DETAIL_TYPES, WAKE_EVENT_SOURCE } from './event.js';
export { createWakeNotifier, WAKE_FAILURE_METRIC, type WakeNotifierOptions } from './notifier.js';
