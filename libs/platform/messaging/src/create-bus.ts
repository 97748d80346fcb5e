import { Bus } from './bus';
import { InProcessBus } from './in-process-bus';
import { JetStreamBus } from './jetstream-bus';

let shared: InProcessBus | undefined;

/** The in-process bus is one per process, shared by every service it hosts (standalone mode). */
export function sharedInProcessBus(): InProcessBus {
  shared ??= new InProcessBus();
  return shared;
}

export async function createBus(natsUrl: string | undefined, name: string, namespace = ''): Promise<Bus> {
  return natsUrl ? JetStreamBus.connect(natsUrl, name, namespace) : sharedInProcessBus();
}
