import { decodeCursor, encodeCursor } from './cursor';

describe('pagination cursors', () => {
  it('round-trips an id', () => {
    expect(decodeCursor('le', encodeCursor('le', '1042'))).toBe('1042');
  });

  it.each(['', 'nope', '!!!', encodeCursor('bj', '5'), encodeCursor('le', '0'), encodeCursor('le', '-1'), encodeCursor('le', '1'.repeat(20)), encodeCursor('le', '9999999999999999999')])(
    'refuses %p for the ledger',
    (cursor) => expect(() => decodeCursor('le', cursor)).toThrow('cursor is not a cursor this API returned'),
  );
});
