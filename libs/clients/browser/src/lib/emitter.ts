type Listener<T> = (payload: T) => void;

/** A small typed event emitter; a listener that throws is reported without stopping the others or the call. */
export class Emitter<Events> {
  private readonly listeners = new Map<keyof Events, Set<Listener<never>>>();

  on<K extends keyof Events>(name: K, listener: Listener<Events[K]>): this {
    let set = this.listeners.get(name);
    if (!set) this.listeners.set(name, (set = new Set()));
    set.add(listener as Listener<never>);
    return this;
  }

  off<K extends keyof Events>(name: K, listener: Listener<Events[K]>): this {
    this.listeners.get(name)?.delete(listener as Listener<never>);
    return this;
  }

  protected emit<K extends keyof Events>(name: K, payload: Events[K]): void {
    for (const listener of [...(this.listeners.get(name) ?? [])]) {
      try {
        (listener as Listener<Events[K]>)(payload);
      } catch (error) {
        // As a DOM event listener's exception is: reported to the page (window.onerror), the call goes on.
        setTimeout(() => {
          throw error;
        });
      }
    }
  }
}
