import { describe, expect, it } from 'vitest'
import { atLeast, grantable } from './roles'
import { fieldOf, toForm, toPatch, validate } from './settings'

describe('settings form', () => {
  const form = toForm('Papers', { confirmation: 'always', allowed_tools: ['web_search', 'code_execute'], max_iterations: 5 })

  it('shows the settings as text and sends them back', () => {
    expect(form.allowed_tools).toBe('web_search, code_execute')
    expect(form.max_iterations).toBe('5')
    expect(toPatch({ ...form, thinking_budget: ' 2048 ', model: '' })).toEqual({
      name: 'Papers',
      settings: {
        confirmation: 'always', allowed_tools: ['web_search', 'code_execute'], max_iterations: 5,
        token_budget: null, model: null, thinking_budget: 2048,
      },
    })
  })

  it('checks what the API checks', () => {
    expect(validate(form)).toEqual({})
    expect(validate({ ...form, name: ' ' }).name?.key).toBe('required')
    expect(validate({ ...form, max_iterations: '0' }).max_iterations?.key).toBe('range')
    expect(validate({ ...form, max_iterations: '501' }).max_iterations?.key).toBe('range')
    expect(validate({ ...form, max_iterations: '2.5' }).max_iterations?.key).toBe('range')
    expect(validate({ ...form, token_budget: '-1' }).token_budget?.key).toBe('range')
    expect(validate({ ...form, thinking_budget: '0' })).toEqual({})
    expect(validate({ ...form, thinking_budget: '1000' }).thinking_budget?.key).toBe('thinking')
    expect(validate({ ...form, allowed_tools: 'x'.repeat(101) }).allowed_tools?.key).toBe('toolTooLong')
  })

  it('finds the field an API error names', () => {
    expect(fieldOf('`settings.max_iterations`: expected `int` >= 1')).toBe('max_iterations')
    expect(fieldOf('`name`: expected `str` of length >= 1')).toBe('name')
    expect(fieldOf('thinking_budget must be below the output limit of a turn (4096 tokens)')).toBe('thinking_budget')
    expect(fieldOf('the body is not valid JSON')).toBeNull()
  })
})

describe('roles', () => {
  it('orders owner > admin > member > viewer', () => {
    expect(atLeast('owner', 'admin')).toBe(true)
    expect(atLeast('member', 'admin')).toBe(false)
    expect(atLeast(undefined, 'viewer')).toBe(false)
    expect(grantable('admin')).toEqual(['admin', 'member', 'viewer'])
    expect(grantable('member')).toEqual([])
  })
})
