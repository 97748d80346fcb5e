/** A keypad agent whose menu sends 2 to support; the lines it says, to compare with transcripts. */
export function keypadAgent(name: string) {
  const menu = 'Press 1 for sales, 2 for support.';
  const support = 'Support is open nine to five.';
  const digitIs = (value: string) => ({ type: 'expression', expression: { conditions: [{ variable: 'digit', operator: 'eq', value }] } });
  const body = {
    name,
    mode: 'keypad',
    languages: [{ code: 'en-US' }],
    flow: {
      start: 'menu',
      nodes: [
        { id: 'menu', type: 'static', say: menu, edges: [{ to: 'sales', ...digitIs('1') }, { to: 'support', ...digitIs('2') }] },
        { id: 'sales', type: 'static', say: 'Connecting you to sales.' },
        { id: 'support', type: 'static', say: support },
      ],
    },
  };
  return { body, menu, support };
}
