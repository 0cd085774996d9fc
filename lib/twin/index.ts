/**
 * `ccm-migrate/twin`: the cluster twin as a library, to rehearse a migration from one's own code or tests:
 * load a spec (or build one), start the twin, point a kubeconfig at it, stop it.
 */

export {
  loadTwinSpec,
  parseTwinSpec,
  type TwinSpec,
  TwinSpecError,
  type TwinSpecInput,
  TwinSpecSchema,
} from './spec.ts';
export { type RealApi, type RunningTwin, startTwin, type TwinOptions, TwinStartError } from './twin.ts';
