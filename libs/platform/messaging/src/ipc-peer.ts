/** One message on a process's IPC channel: a request, its reply, or a notification. */
export type IpcMessage =
  | { ipc: 'request'; id: number; method: string; params: unknown }
  | { ipc: 'reply'; id: number; result?: unknown; error?: string }
  | { ipc: 'notify'; method: string; params: unknown };

/** What carries the messages: a child process and its parent (`process.send`), or an in-memory pair in tests. */
export interface IpcChannel {
  send(message: IpcMessage): void;
  onMessage(handler: (message: IpcMessage) => void): void;
}

/** Either side of a Node IPC channel (`child_process.fork` in the parent, `process` in the child). */
export function processChannel(proc: { send?: (message: never) => boolean; on(event: 'message', listener: (message: unknown) => void): unknown; connected?: boolean }): IpcChannel {
  return {
    send: (message) => {
      // A channel that closed (the other side exited) drops the message; the peer's requests time out or fail.
      if (proc.connected !== false) proc.send?.(message as never);
    },
    onMessage: (handler) => {
      proc.on('message', (message) => {
        if (message && typeof message === 'object' && 'ipc' in message) handler(message as IpcMessage);
      });
    },
  };
}

type Handler = (params: never) => unknown;

/**
 * Requests, replies and notifications between two processes over one channel: the standalone process and the
 * child it runs the media worker in. Requests are answered by the handler registered for their method; a method
 * nobody handles is an error reply, so a mismatch shows at once instead of as a hang.
 */
export class IpcPeer {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly handlers = new Map<string, Handler>();
  private readonly listeners = new Map<string, Handler>();
  private closedReason: string | undefined;

  constructor(private readonly channel: IpcChannel) {
    channel.onMessage((message) => void this.receive(message));
  }

  handle<P, R>(method: string, handler: (params: P) => R | Promise<R>): void {
    this.handlers.set(method, handler as Handler);
  }

  on<P>(method: string, listener: (params: P) => void): void {
    this.listeners.set(method, listener as Handler);
  }

  request<R = unknown>(method: string, params: unknown = {}): Promise<R> {
    if (this.closedReason) return Promise.reject(new Error(this.closedReason));
    const id = this.nextId++;
    return new Promise<R>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.channel.send({ ipc: 'request', id, method, params });
    });
  }

  notify(method: string, params: unknown = {}): void {
    if (!this.closedReason) this.channel.send({ ipc: 'notify', method, params });
  }

  /** The other side is gone: every pending and later request fails with `reason`. */
  close(reason: string): void {
    this.closedReason = reason;
    for (const { reject } of this.pending.values()) reject(new Error(reason));
    this.pending.clear();
  }

  private async receive(message: IpcMessage): Promise<void> {
    if (message.ipc === 'reply') {
      const waiter = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.error !== undefined) waiter?.reject(new Error(message.error));
      else waiter?.resolve(message.result);
      return;
    }
    if (message.ipc === 'notify') {
      this.listeners.get(message.method)?.(message.params as never);
      return;
    }
    const handler = this.handlers.get(message.method);
    try {
      if (!handler) throw new Error(`no handler for ${message.method}`);
      const result = await handler(message.params as never);
      this.channel.send({ ipc: 'reply', id: message.id, result });
    } catch (error) {
      this.channel.send({ ipc: 'reply', id: message.id, error: error instanceof Error ? error.message : String(error) });
    }
  }
}
