import { ChildProcess, fork } from 'node:child_process';
import { ServiceConfig } from '@parley/config';
import { Bus, IpcBus, IpcBusHost, IpcPeer, processChannel } from '@parley/messaging';
import { addMetricsSource, metricsRegistry, serviceLogger } from '@parley/observability';
import { runProcess } from './run-process';
import { ServiceDefinition } from './service-definition';
import { startService } from './start-service';

type MetricsJson = Awaited<ReturnType<typeof metricsRegistry.getMetricsAsJSON>>;

export interface ChildServiceOptions {
  name: string;
  /** The compiled script that calls `runChildService`. */
  entry: string;
  /** The parent's in-process bus, carried to the child over IPC; absent when the child connects to NATS itself. */
  bus?: Bus;
  env?: NodeJS.ProcessEnv;
  /** How long the child may take to start before it is taken as failed. Default 60 s. */
  startTimeoutMs?: number;
}

const RESTART_MIN_MS = 1_000;
const RESTART_MAX_MS = 30_000;
/** A child that ran this long without dying resets the restart back-off. */
const STABLE_AFTER_MS = 60_000;

/**
 * One service run in its own child process by the standalone process (still one command): its event loop, heap
 * and garbage collector are its own, so control-plane work never delays its timers. The child reaches the other
 * services over gRPC on loopback as in distributed mode, the parent's in-process bus over IPC, and its metrics
 * appear in the parent's /metrics. Supervised: a child that dies is started again (back-off 1 s doubling to 30 s).
 */
export class ChildService {
  private readonly log;
  private readonly busHost: IpcBusHost | undefined;
  private child: ChildProcess | undefined;
  private peer: IpcPeer | undefined;
  private stopping = false;
  private restartDelay = RESTART_MIN_MS;
  private restartTimer: NodeJS.Timeout | undefined;
  private readonly removeMetrics: () => void;

  constructor(private readonly options: ChildServiceOptions) {
    this.log = serviceLogger(options.name);
    this.busHost = options.bus ? new IpcBusHost(options.bus) : undefined;
    this.removeMetrics = addMetricsSource(() => this.request<MetricsJson>('child.metrics'));
  }

  get name(): string {
    return this.options.name;
  }

  /** Process id of the running child (undefined between a death and its restart). */
  get pid(): number | undefined {
    return this.child?.exitCode === null ? this.child.pid : undefined;
  }

  /** Starts the child and resolves once its service is up; rejects if it exits or times out first. */
  async start(): Promise<void> {
    const child = fork(this.options.entry, [], {
      env: { ...process.env, ...this.options.env },
      execArgv: process.execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const peer = new IpcPeer(processChannel(child));
    this.child = child;
    this.peer = peer;
    this.busHost?.attach(peer);
    const startedAt = Date.now();
    const started = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.name} did not start within ${this.options.startTimeoutMs ?? 60_000} ms`)), this.options.startTimeoutMs ?? 60_000);
      peer.on('child.started', () => {
        clearTimeout(timer);
        resolve();
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`${this.name} exited during start-up (${signal ?? `code ${code}`})`));
      });
    });
    child.once('exit', (code, signal) => {
      peer.close(`${this.name} process exited`);
      if (this.child === child) this.busHost?.detach();
      if (this.stopping) return;
      this.log.error({ code, signal, pid: child.pid }, `${this.name} process died; starting it again`);
      if (Date.now() - startedAt > STABLE_AFTER_MS) this.restartDelay = RESTART_MIN_MS;
      this.scheduleRestart();
    });
    await started;
    this.log.info({ pid: child.pid }, `${this.name} runs in its own process`);
  }

  /** Whether the child runs and its own readiness checks pass. */
  async ready(): Promise<boolean> {
    return (await this.request<{ ready: boolean }>('child.readiness').catch(() => undefined))?.ready === true;
  }

  /** SIGTERM to the child, which drains as its own process would, then resolves when it has exited. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    this.removeMetrics();
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    await exited;
  }

  private request<R>(method: string): Promise<R> {
    return this.peer ? this.peer.request<R>(method) : Promise.reject(new Error(`${this.name} is not running`));
  }

  private scheduleRestart(): void {
    const delay = this.restartDelay;
    this.restartDelay = Math.min(RESTART_MAX_MS, delay * 2);
    this.restartTimer = setTimeout(() => {
      if (this.stopping) return;
      this.start().catch((error) => {
        this.log.error({ err: error }, `${this.name} could not be started again`);
        if (!this.stopping && this.child?.exitCode === null) this.child.kill('SIGKILL');
      });
    }, delay);
    this.restartTimer.unref();
  }
}

/**
 * The child side of ChildService: runs `def` in this process on the parent's bus (over IPC) or on NATS when
 * NATS_URL is set, answers the parent's metrics and readiness requests, and shuts down like any service process on
 * SIGTERM — or when the parent disappears without a word (the IPC channel closes).
 */
export function runChildService<C extends ServiceConfig>(def: ServiceDefinition<C>, configClass: new () => C): void {
  const peer = new IpcPeer(processChannel(process));
  peer.handle('child.metrics', () => metricsRegistry.getMetricsAsJSON());
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
  void runProcess(configClass, async (config) => {
    const service = await startService(def, config, { standalone: true, ...(config.NATS_URL ? {} : { bus: new IpcBus(peer) }) });
    peer.handle('child.readiness', () => service.health.readiness());
    peer.notify('child.started');
    return [service];
  });
}
