import { describe, expect, it } from 'vitest'
import { barsOf, budgetBody, level } from './budgets'
import { chartOf, daysBetween, range, ticks, toCsv, type UsageItem } from './series'

const figures = { input_tokens: 1000, output_tokens: 500, cache_read_tokens: 2000, cache_write_tokens: 300, calls: 1, unpriced_calls: 0 }
const item = (day: string, model: string, cost: string): UsageItem => ({ ...figures, day, model, cost_usd: cost })

describe('usage chart', () => {
  const report = {
    from: '2026-11-01', to: '2026-11-03', totals: { ...figures, cost_usd: '0.036675' },
    items: [item('2026-11-01', 'sonnet', '0.012225'), item('2026-11-03', 'haiku', '0.002000'), item('2026-11-03', 'sonnet', '0.022450')],
  }

  it('has every day of the range, stacked by the key, the largest series first', () => {
    const chart = chartOf(report, 'model', 'cost')
    expect(chart.days.map((d) => d.day)).toEqual(['2026-11-01', '2026-11-02', '2026-11-03'])
    expect(chart.keys).toEqual(['sonnet', 'haiku'])
    expect(chart.days[1]?.total).toBe(0)
    expect(chart.days[2]?.values.get('haiku')).toBeCloseTo(0.002)
    expect(chart.max).toBeCloseTo(0.02445)
  })

  it('counts tokens of every kind', () => {
    expect(chartOf(report, 'model', 'tokens').days[0]?.total).toBe(3800)
  })

  it('crosses months and years', () => {
    expect(daysBetween('2026-12-31', '2027-01-01')).toEqual(['2026-12-31', '2027-01-01'])
    expect(range(7, new Date('2026-11-28T10:00:00Z'))).toEqual({ from: '2026-11-22', to: '2026-11-28' })
    expect(range('month', new Date('2026-11-28T10:00:00Z'))).toEqual({ from: '2026-11-01', to: '2026-11-28' })
  })

  it('rounds the axis up', () => {
    expect(ticks(0.02445)).toEqual([0, 0.01, 0.02, 0.03])
    expect(ticks(3800)).toEqual([0, 1000, 2000, 3000, 4000])
    expect(ticks(0)).toEqual([0, 1])
  })

  it('writes the rows as CSV with the API decimals and quotes', () => {
    const csv = toCsv([item('2026-11-01', 'a,"b"', '0.012225')], 'model')
    expect(csv).toBe(
      'day,model,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,cost_usd,calls,unpriced_calls\n' +
        '2026-11-01,"a,""b""",1000,500,2000,300,0.012225,1,0\n',
    )
  })
})

describe('budget bars', () => {
  const budget = {
    scope: 'workspace' as const, scope_id: 'w', monthly_usd: '0.040000', monthly_tokens: null,
    thresholds: [50, 80, 100], period: '2026-11', spent_usd: '0.024450', spent_tokens: 7600,
  }

  it('shows the share of each limit at its level', () => {
    const [usd, ...rest] = barsOf(budget)
    expect(rest).toEqual([])
    expect(usd?.percent).toBeCloseTo(61.125)
    expect(usd?.level).toBe('warn')
    expect(level(10, [50])).toBe('ok')
    expect(level(100, [50])).toBe('over')
    expect(barsOf({ ...budget, monthly_tokens: 1000 })[1]?.level).toBe('over')
  })

  it('reads the form', () => {
    expect(budgetBody('0.04', '', '50, 80,100')).toEqual({ body: { monthly_usd: '0.04', thresholds: [50, 80, 100] } })
    expect(budgetBody('', '5000', '')).toEqual({ body: { monthly_tokens: 5000, thresholds: [] } })
    expect(budgetBody('-1', '', '')).toEqual({ field: 'usd' })
    expect(budgetBody('', '1.5', '')).toEqual({ field: 'tokens' })
    expect(budgetBody('1', '', '50,x')).toEqual({ field: 'thresholds' })
  })
})
