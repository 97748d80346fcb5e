import { InProcessBus } from '@parley/messaging';
import { CallLinks, LinkEnd } from './call-links';

/** An end that writes down what reaches it. */
function recorder(role: string) {
  const heard: string[] = [];
  const audio: { samples: number[]; rate: number }[] = [];
  const end: LinkEnd = {
    role,
    joined: (r) => heard.push(`joined ${r}`),
    audio: (pcm, rate) => audio.push({ samples: [...pcm], rate }),
    dtmf: (d) => heard.push(`dtmf ${d}`),
    signal: (data) => heard.push(`signal ${JSON.stringify(data)}`),
    left: (r, reason) => heard.push(`left ${r} ${reason}`),
  };
  return { end, heard, audio };
}

/** Lets the bus's listeners run (the in-process bus delivers at once; this covers promise turns). */
const settle = () => new Promise((r) => setImmediate(r));

describe.each([
  ['on one worker (in memory)', () => {
    const links = new CallLinks(new InProcessBus());
    return [links, links] as const;
  }],
  ['on two workers (over the bus)', () => {
    const bus = new InProcessBus();
    return [new CallLinks(bus), new CallLinks(bus)] as const;
  }],
])('CallLinks %s', (_name, workers) => {
  it('tells each end of the other, then carries audio, keypresses and signals both ways', async () => {
    const [first, second] = workers();
    const phone = recorder('phone');
    const operator = recorder('operator');
    const phoneLink = await first.join('call_1', phone.end);
    phoneLink.audio(Int16Array.from([1, 2, 3]), 8000); // nobody there yet: dropped
    const operatorLink = await second.join('call_1', operator.end);
    await settle();
    expect(phone.heard).toEqual(['joined operator']);
    expect(operator.heard).toEqual(['joined phone']);

    phoneLink.audio(Int16Array.from([4, -5, 32767]), 8000);
    operatorLink.audio(Int16Array.from([-32768, 7]), 16000);
    operatorLink.dtmf('5');
    operatorLink.signal({ sdp: 'x' });
    await settle();
    expect(operator.audio).toEqual([{ samples: [4, -5, 32767], rate: 8000 }]);
    expect(phone.audio).toEqual([{ samples: [-32768, 7], rate: 16000 }]);
    expect(phone.heard).toEqual(['joined operator', 'dtmf 5', 'signal {"sdp":"x"}']);
  });

  it('tells the other end when one leaves, and carries nothing after', async () => {
    const [first, second] = workers();
    const phone = recorder('phone');
    const operator = recorder('operator');
    const phoneLink = await first.join('call_1', phone.end);
    const operatorLink = await second.join('call_1', operator.end);
    await settle();
    operatorLink.leave('completed');
    operatorLink.leave('completed'); // once
    await settle();
    expect(phone.heard).toEqual(['joined operator', 'left operator completed']);
    phoneLink.audio(Int16Array.from([1]), 8000);
    operatorLink.dtmf('1');
    await settle();
    expect(operator.audio).toEqual([]);
    expect(phone.heard).toHaveLength(2);
    expect(first.size + second.size).toBeGreaterThan(0);
    phoneLink.leave('completed');
    expect(first.size + second.size).toBe(0);
  });

  it('keeps calls apart', async () => {
    const [first, second] = workers();
    const a = recorder('phone');
    const b = recorder('operator');
    await first.join('call_1', a.end);
    await second.join('call_2', b.end);
    await settle();
    expect(a.heard).toEqual([]);
    expect(b.heard).toEqual([]);
  });
});

describe('CallLinks across workers', () => {
  it('pairs two ends that announce themselves at the same moment once each', async () => {
    const bus = new InProcessBus();
    const phone = recorder('phone');
    const operator = recorder('operator');
    await Promise.all([new CallLinks(bus).join('call_1', phone.end), new CallLinks(bus).join('call_1', operator.end)]);
    await settle();
    expect(phone.heard).toEqual(['joined operator']);
    expect(operator.heard).toEqual(['joined phone']);
  });

  it('without a bus, pairs ends on this worker only', async () => {
    const links = new CallLinks();
    const phone = recorder('phone');
    const operator = recorder('operator');
    await links.join('call_1', phone.end);
    await links.join('call_1', operator.end);
    expect(phone.heard).toEqual(['joined operator']);
  });
});
