import type { CompileOptions } from '../flow/index.ts';
import type { Intake } from '../intake/index.ts';
import type { HttpClient } from '../outbound/index.ts';
import type { FlowSchedules, RunQueue, TenantLimitsInRedis } from '../queue/index.ts';
import type { TestRunner } from '../runtime/index.ts';
import type { Keyring } from '../secrets/index.ts';
import type { Store } from '../store/index.ts';
import { ActionService } from './action-service.ts';
import { AlertService } from './alert-service.ts';
import { BlockedTopicService } from './blocked-topic-service.ts';
import { DataSpaceService } from './data-space-service.ts';
import { type DestinationKinds, DestinationService } from './destination-service.ts';
import { EnvironmentService } from './environment-service.ts';
import { FixtureService } from './fixture-service.ts';
import { FlowFileService } from './flow-file-service.ts';
import { FlowService } from './flow-service.ts';
import { IncrementalFieldService } from './incremental-field-service.ts';
import { ReplayService } from './replay-service.ts';
import { RunService } from './run-service.ts';
import { StatisticsService } from './statistics-service.ts';
import { TenantService } from './tenant-service.ts';
import { TestRunService } from './test-run-service.ts';
import { UserSettingsService } from './user-settings-service.ts';
import { ValueService } from './value-service.ts';

/** Every use case, by concept. */
export interface EngineServices {
  flows: FlowService;
  /** Flows as files: drafts pulled, and pushed back from a folder. */
  flowFiles: FlowFileService;
  tenants: TenantService;
  /** A tenant's environments besides production. */
  environments: EnvironmentService;
  alerts: AlertService;
  replays: ReplayService;
  /** Runs started after the fact: replays, retries, held runs released. */
  runs: RunService;
  values: ValueService;
  dataSpaces: DataSpaceService;
  actions: ActionService;
  destinations: DestinationService;
  blockedTopics: BlockedTopicService;
  incrementalFields: IncrementalFieldService;
  userSettings: UserSettingsService;
  statistics: StatisticsService;
  /** Drafts tried with sample input, recording nothing. */
  testRuns: TestRunService;
  /** Tests recorded from runs, and run again against the recording. */
  fixtures: FixtureService;
}

/** The parts of a process the services work with. */
export interface ServiceParts {
  store: Store;
  queue: RunQueue;
  compile: CompileOptions;
  keyring: Keyring;
  /** Outbound HTTP on a tenant's behalf (alert tests, webhook registration), as the workers' is. */
  http: HttpClient;
  intake: Pick<Intake, 'invalidate' | 'invalidateTenant' | 'quota'>;
  schedules: Pick<FlowSchedules, 'sync' | 'removeTenant'>;
  tenantLimits: Pick<TenantLimitsInRedis, 'apply'>;
  destinationKinds: DestinationKinds;
  testRunner: TestRunner;
}

/** The services over one process's parts; a flow's new active version reaches its URL's cache and its schedule. */
export function engineServices(parts: ServiceParts): EngineServices {
  const { store, keyring, http, intake, schedules } = parts;
  const runs = new RunService(store, parts.queue);
  const flows = new FlowService(store, parts.compile, async (tenantId, flow) => {
    intake.invalidate(tenantId, flow.key);
    await schedules.sync(tenantId, flow.id);
  });
  return {
    flows,
    flowFiles: new FlowFileService(store, flows, parts.compile),
    tenants: new TenantService(store, runs, schedules, parts.tenantLimits, intake),
    environments: new EnvironmentService(store, schedules, parts.tenantLimits, intake),
    alerts: new AlertService(store, keyring, http),
    replays: new ReplayService(store),
    runs,
    values: new ValueService(store, keyring, intake),
    dataSpaces: new DataSpaceService(store),
    actions: new ActionService(store, parts.compile.sandbox),
    destinations: new DestinationService(store, keyring, http, parts.destinationKinds),
    blockedTopics: new BlockedTopicService(store, runs),
    incrementalFields: new IncrementalFieldService(store),
    userSettings: new UserSettingsService(store),
    statistics: new StatisticsService(store, intake),
    testRuns: new TestRunService(flows, parts.compile, parts.testRunner),
    fixtures: new FixtureService(store, parts.compile, parts.testRunner),
  };
}
