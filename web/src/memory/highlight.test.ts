import { describe, expect, it } from 'vitest'
import { highlight, scopeOf } from './highlight'

describe('highlight', () => {
  it("marks the server's **matches** and drops the stars", () => {
    expect(highlight('Which **lighthouse** guards **Ouessant**?', 'nothing')).toEqual([
      { text: 'Which ', hit: false },
      { text: 'lighthouse', hit: true },
      { text: ' guards ', hit: false },
      { text: 'Ouessant', hit: true },
      { text: '?', hit: false },
    ])
  })

  it("marks the query's words in the snippet, in any case, longest first", () => {
    expect(highlight('Tides at Brest are semidiurnal', 'brest tide')).toEqual([
      { text: 'Tide', hit: true },
      { text: 's at ', hit: false },
      { text: 'Brest', hit: true },
      { text: ' are semidiurnal', hit: false },
    ])
  })

  it('keeps markup as text and treats regex characters as plain', () => {
    expect(highlight('<b>a+b</b>', 'a+b')).toEqual([
      { text: '<b>', hit: false },
      { text: 'a+b', hit: true },
      { text: '</b>', hit: false },
    ])
    expect(highlight('nothing here', '  ')).toEqual([{ text: 'nothing here', hit: false }])
  })
})

describe('scopeOf', () => {
  it('names the kind of a namespace', () => {
    expect(['user:1', 'workspace:2', 'team:3', 'odd'].map(scopeOf)).toEqual(['user', 'workspace', 'team', 'other'])
  })
})
