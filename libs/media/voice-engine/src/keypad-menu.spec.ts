import { FlowNode } from './agent-settings';
import { ManualClock } from './clock';
import { KeypadMenu } from './keypad-menu';

const nodes: FlowNode[] = [
  {
    id: 'menu',
    type: 'static',
    say: 'Press 1 for sales, 2 for support.',
    edges: [
      { to: 'sales', type: 'expression', expression: { conditions: [{ variable: 'digit', operator: 'eq', value: '1' }] } },
      { to: 'vip', type: 'expression', priority: -1, expression: { conditions: [{ variable: 'digit', operator: 'eq', value: '2' }, { variable: 'tier', operator: 'eq', value: 'gold' }] } },
      { to: 'support', type: 'expression', expression: { conditions: [{ variable: 'digit', operator: 'in', value: ['2', '3'] }] } },
    ],
  },
  { id: 'sales', type: 'static', say: 'Connecting you to sales.' },
  { id: 'support', type: 'static', say: 'Support is open nine to five.' },
  { id: 'vip', type: 'static', say: 'Welcome back, gold member.' },
];

function rig(variables: Record<string, string> = {}) {
  const clock = new ManualClock();
  const said: [string, number][] = [];
  const keys: string[] = [];
  const ends: string[] = [];
  let ended = false;
  const menu = new KeypadMenu({
    clock,
    flow: { start: 'menu', nodes },
    timeoutSeconds: 3,
    maxNoInput: 2,
    noInput: 'Sorry, I did not get that.',
    variables,
    lineOf: (node) => node.say ?? '',
    // Each line takes a second to say.
    say: (line) => (said.push([line, clock.now()]), new Promise<{ interrupted: boolean }>((r) => clock.setTimeout(() => r({ interrupted: false }), 1000))),
    interrupt: () => undefined,
    onKey: (digit) => void keys.push(digit),
    goodbye: async (reason) => void ((ended = true), ends.push(`goodbye ${reason}`)),
    finish: (reason) => void ((ended = true), ends.push(reason)),
    ended: () => ended,
  });
  return { clock, menu, said, keys, ends };
}

describe('KeypadMenu', () => {
  it('reads the start node and follows the key pressed to the node its edge names, then ends at a leaf', async () => {
    const { clock, menu, said, keys, ends } = rig();
    void menu.start();
    await clock.advance(1500);
    menu.press('3');
    await clock.advance(2000);
    expect(said.map(([line]) => line)).toEqual(['Press 1 for sales, 2 for support.', 'Support is open nine to five.']);
    expect(keys).toEqual(['3']);
    expect(ends).toEqual(['completed']);
  });

  it('tries expression edges by priority, with the call’s variables', async () => {
    const { clock, menu, said } = rig({ tier: 'gold' });
    void menu.start();
    await clock.advance(1500);
    menu.press('2');
    await clock.advance(2000);
    expect(said.at(-1)?.[0]).toBe('Welcome back, gold member.');
  });

  it('says a key is not an option and reads the menu again', async () => {
    const { clock, menu, said } = rig();
    void menu.start();
    await clock.advance(1500);
    menu.press('9');
    await clock.advance(2500);
    expect(said.map(([line]) => line)).toEqual(['Press 1 for sales, 2 for support.', 'Sorry, that is not an option.', 'Press 1 for sales, 2 for support.']);
  });

  it('repeats the menu after no_input once the timeout passes, and says goodbye after max_no_input rounds', async () => {
    const { clock, menu, said, ends } = rig();
    void menu.start();
    await clock.advance(30_000);
    expect(said).toEqual([
      ['Press 1 for sales, 2 for support.', 0],
      ['Sorry, I did not get that.', 4000],
      ['Press 1 for sales, 2 for support.', 5000],
    ]);
    expect(ends).toEqual(['goodbye no_input']);
  });

  it('lists every line it may say, for synthesis ahead', () => {
    expect(rig().menu.lines()).toEqual([
      'Press 1 for sales, 2 for support.',
      'Connecting you to sales.',
      'Support is open nine to five.',
      'Welcome back, gold member.',
      'Sorry, I did not get that.',
      'Sorry, that is not an option.',
    ]);
  });
});
