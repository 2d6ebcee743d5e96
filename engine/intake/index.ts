/** Flow-URL deliveries: resolve, verify, store and enqueue; large JSON bodies checked off the event loop. */
export { type Delivery, Intake, type IntakeResult } from './intake.ts';
export { JsonChecker } from './json-checker.ts';
