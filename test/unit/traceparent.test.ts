/**
 * W3C trace context on a message (lib/trace/traceparent.ts): the traceparent read and written,
 * Lambda's X-Ray AWSTraceHeader read as one, and what a received message says of its producer.
 */
import {
  formatTraceparent,
  parseTraceparent,
  producerContextOf,
  traceParentFromXray,
  tracestateProblem,
} from '../../lib/trace/traceparent';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const SPAN = 'b7ad6b7169203331';

describe('traceparent', () => {
  it('reads the spec example and writes it back the same', () => {
    const value = `00-${TRACE}-${SPAN}-01`;
    expect(parseTraceparent(value)).toEqual({ traceId: TRACE, spanId: SPAN, traceFlags: 1 });
    expect(formatTraceparent({ traceId: TRACE, spanId: SPAN, traceFlags: 1 })).toBe(value);
    expect(formatTraceparent({ traceId: TRACE, spanId: SPAN, traceFlags: 0 })).toBe(`00-${TRACE}-${SPAN}-00`);
  });

  it('reads a later version with more fields (forward compatibility), keeping the first four', () => {
    expect(parseTraceparent(`cc-${TRACE}-${SPAN}-01-what-the-future-adds`)).toEqual({ traceId: TRACE, spanId: SPAN, traceFlags: 1 });
  });

  it.each([
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['version 00 with more fields', `00-${TRACE}-${SPAN}-01-extra`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['an all-zero parent id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['a short trace id', `00-${TRACE.slice(1)}-${SPAN}-01`],
    ['a missing flags field', `00-${TRACE}-${SPAN}`],
    ['other separators', `00_${TRACE}_${SPAN}_01`],
    ['an X-Ray header', 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1'],
    ['an empty string', ''],
    ['a very long string', `00-${TRACE}-${SPAN}-01-${'x'.repeat(600)}`],
    ['not a string', 42],
  ])('ignores %s', (_what, value) => {
    expect(parseTraceparent(value)).toBeUndefined();
  });
});

describe('tracestate', () => {
  it('takes a list of key=value members up to 512 characters', () => {
    expect(tracestateProblem('rojo=00f067aa0ba902b7,congo=t61rcWkgMzE')).toBeUndefined();
    expect(tracestateProblem('')).toBeUndefined();
    expect(tracestateProblem(`a=${'x'.repeat(511)}`)).toMatch(/longer than 512/);
    expect(tracestateProblem('rojo')).toMatch(/not key=value/);
    expect(tracestateProblem('rojo=a\u00e9')).toMatch(/printable ASCII/);
  });
});

describe("Lambda's X-Ray AWSTraceHeader", () => {
  it('is the trace id of its Root (8 + 24 hex digits), the span id of its Parent and the flag of Sampled', () => {
    expect(traceParentFromXray('Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1')).toEqual({
      traceId: '5759e988bd862e3fe1be46a994272793',
      spanId: '53995c3f42cd8ad8',
      traceFlags: 1,
    });
  });

  it('reads fields in any order and case, Sampled=0 or a deferred decision as not sampled', () => {
    expect(traceParentFromXray('Parent=53995C3F42CD8AD8;Sampled=0;Root=1-5759E988-BD862E3FE1BE46A994272793;Lineage=a87bd80c:1')).toEqual({
      traceId: '5759e988bd862e3fe1be46a994272793',
      spanId: '53995c3f42cd8ad8',
      traceFlags: 0,
    });
    expect(traceParentFromXray('Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=?')?.traceFlags).toBe(0);
  });

  it.each([
    ['no Parent', 'Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1'],
    ['no Root', 'Parent=53995c3f42cd8ad8;Sampled=1'],
    ['a Root of another version', 'Root=2-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8'],
    ['a short Parent', 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad'],
    ['a traceparent', `00-${TRACE}-${SPAN}-01`],
  ])('is nothing with %s', (_what, header) => {
    expect(traceParentFromXray(header)).toBeUndefined();
  });
});

describe('the producer context of a received message', () => {
  const XRAY = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1';

  it('is its traceparent attribute (and tracestate), before any X-Ray header', () => {
    expect(producerContextOf({ traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: 'rojo=00f067aa0ba902b7' }, XRAY)).toEqual({
      parent: { traceId: TRACE, spanId: SPAN, traceFlags: 1 },
      tracestate: 'rojo=00f067aa0ba902b7',
      source: 'traceparent',
    });
  });

  it('is the X-Ray header when no traceparent is there', () => {
    expect(producerContextOf({}, XRAY)).toEqual({
      parent: { traceId: '5759e988bd862e3fe1be46a994272793', spanId: '53995c3f42cd8ad8', traceFlags: 1 },
      source: 'xray',
    });
    expect(producerContextOf({})).toEqual({});
  });

  it('says a traceparent that is not trace context was rejected (shortened), and falls back to X-Ray', () => {
    const hostile = `garbage ${'x'.repeat(200)}`;
    const read = producerContextOf({ traceparent: hostile }, XRAY);
    expect(read.source).toBe('xray');
    expect(read.rejected).toHaveLength(80);
    expect(producerContextOf({ traceparent: 'nope' })).toEqual({ rejected: 'nope' });
  });

  it('drops a tracestate out of shape, keeping the traceparent', () => {
    expect(producerContextOf({ traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: 'x'.repeat(600) })).toEqual({
      parent: { traceId: TRACE, spanId: SPAN, traceFlags: 1 },
      source: 'traceparent',
    });
  });
});
