/**
 * A prediction that carries its own load. How much longer a request takes on the deployment grows
 * with the load on it (a refresh on the 3-node cluster: 21-62 ms idle; at a tree workload's rate,
 * 30-100 ms more than on one node), and the load is the rate the prediction gives. So the added latency is measured
 * at the predicted rate itself: the rate R where predict(added measured at R) = R. The prediction
 * falls as the added latency grows, and that grows with R, so bisection finds it: below R the
 * prediction is above the rate, above R below it. Pure, with the measurement passed in.
 */
import { type Calibration, type Deployment, noRequests, type PerKind, perKind, predict } from './model.js';

/** One bisection step: the rate the load was offered at and what the model predicted from it. */
export interface LoadedStep {
  rate: number;
  predicted: number;
  addedMs: PerKind;
}

export interface LoadedPrediction {
  /** Where the bisection settled: the middle of its last bracket, ops/s. */
  capacity: number;
  /** Added latency measured at the step nearest that rate. */
  addedMs: PerKind;
  steps: LoadedStep[];
}

/** Requests per second of each kind that `rate` operations a second send (the calibration's mix at a light load). */
export const requestRates = (calibration: Calibration, rate: number): PerKind => perKind((kind) => rate * (calibration.requestMix?.[kind] ?? 0));

/**
 * Bisects between 0 and the prediction were nothing slower on the deployment (the calibrated
 * capacity, as the model bounds it). Not the prediction from the idle figures: under load the
 * single node slows too, and the cluster measured less added time under load than idle for writes
 * and reads. `measureAdded` returns how much longer each kind takes on the deployment at the given
 * request rates; a kind it could not measure (NaN: no such requests at that load) keeps the idle
 * figure (`deployment.addedMs`).
 */
export async function loadedPrediction(
  calibration: Calibration,
  deployment: Deployment,
  measureAdded: (rates: PerKind, step: number) => Promise<PerKind>,
  steps: number,
  onStep?: (step: LoadedStep, index: number) => void,
): Promise<LoadedPrediction> {
  const bracket = { low: 0, high: predict(calibration, { ...deployment, addedMs: noRequests() }).capacity };
  const done: LoadedStep[] = [];
  for (let index = 0; index < steps && bracket.high > 0; index++) {
    const rate = (bracket.low + bracket.high) / 2;
    const measured = await measureAdded(requestRates(calibration, rate), index);
    const addedMs = perKind((kind) => (Number.isNaN(measured[kind]) ? deployment.addedMs[kind] : measured[kind]));
    const step = { rate, predicted: predict(calibration, { ...deployment, addedMs }).capacity, addedMs };
    done.push(step);
    onStep?.(step, index);
    if (step.predicted >= rate) bracket.low = rate;
    else bracket.high = rate;
  }
  const capacity = (bracket.low + bracket.high) / 2;
  const nearest = done.reduce<LoadedStep | undefined>(
    (best, step) => (!best || Math.abs(step.rate - capacity) < Math.abs(best.rate - capacity) ? step : best),
    undefined,
  );
  return { capacity, addedMs: nearest?.addedMs ?? deployment.addedMs, steps: done };
}
