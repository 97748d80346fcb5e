/** Cuts a stream of samples into whole frames; the last partial frame is padded with silence. */
export class FrameCutter {
  // Frames are views into a slab of SLAB_FRAMES frames: one ArrayBuffer per slab rather than per 20 ms frame, which
  // is what young-generation GC pauses grow with when hundreds of calls play at once.
  private static readonly SLAB_FRAMES = 16;
  private slab: Int16Array;
  private start = 0;
  private filled = 0;

  constructor(private readonly size: number) {
    this.slab = new Int16Array(size * FrameCutter.SLAB_FRAMES);
  }

  push(samples: Int16Array): Int16Array[] {
    const frames: Int16Array[] = [];
    let at = 0;
    while (at < samples.length) {
      const take = Math.min(this.size - this.filled, samples.length - at);
      this.slab.set(samples.subarray(at, at + take), this.start + this.filled);
      this.filled += take;
      at += take;
      if (this.filled === this.size) frames.push(this.next());
    }
    return frames;
  }

  flush(): Int16Array | undefined {
    return this.filled ? this.next() : undefined; // the rest of the frame is already silence
  }

  private next(): Int16Array {
    const frame = this.slab.subarray(this.start, this.start + this.size);
    this.start += this.size;
    this.filled = 0;
    if (this.start === this.slab.length) {
      this.slab = new Int16Array(this.slab.length);
      this.start = 0;
    }
    return frame;
  }
}
