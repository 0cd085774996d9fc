/**
 * The functions' one logger, metrics and tracer: Powertools for AWS Lambda (TypeScript), created once per
 * function and wired in by their middy middlewares (lib/aws/handler.ts). A log line is Powertools' JSON
 * with the Lambda context and cold start, at the level the environment sets (POWERTOOLS_LOG_LEVEL, or the
 * function's AWS_LAMBDA_LOG_LEVEL), but of the fields a call passes only those named in SAFE_FIELDS: an
 * event or a step's result is never logged whole, so a payload that carried a secret by mistake could
 * still not reach the logs. Metrics are CloudWatch Embedded Metric Format lines in the same log: Lambda's
 * log delivery turns them into metrics, so a function needs no cloudwatch:PutMetricData grant.
 */
import { LogFormatter, LogItem, Logger as PowertoolsLogger } from '@aws-lambda-powertools/logger';
import type { LogAttributes, UnformattedAttributes } from '@aws-lambda-powertools/logger/types';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';
import { METRIC_NAMESPACE } from './metrics.ts';

const SAFE_FIELDS = [
  'step',
  'clusterId',
  'runId',
  'node',
  'kind',
  'status',
  'executionArn',
  'errorName',
  'durationMs',
] as const;
export type LogFields = Partial<Record<(typeof SAFE_FIELDS)[number], string | number>>;

const SERVICE = 'ccm-migrate';

/** Powertools' own fields (level, message, time, Lambda context, trace id), then the allowed ones only. */
class AllowlistFormatter extends LogFormatter {
  override formatAttributes(attributes: UnformattedAttributes, fields: LogAttributes): LogItem {
    const context = attributes.lambdaContext;
    return new LogItem({
      attributes: {
        level: attributes.logLevel,
        message: attributes.message,
        timestamp: this.formatTimestamp(attributes.timestamp),
        service: attributes.serviceName,
        cold_start: context?.coldStart,
        function_name: context?.functionName,
        function_request_id: context?.awsRequestId,
        xray_trace_id: attributes.xRayTraceId,
        ...Object.fromEntries(SAFE_FIELDS.flatMap((k) => (k in fields ? [[k, fields[k]]] : []))),
      },
    });
  }
}

export const powertools = {
  logger: new PowertoolsLogger({ serviceName: SERVICE, logFormatter: new AllowlistFormatter() }),
  metrics: new Metrics({ namespace: METRIC_NAMESPACE, serviceName: SERVICE }),
  tracer: new Tracer({ serviceName: SERVICE }),
};

export interface Logger {
  info(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** Count one of metric `name` (lib/aws/metrics.ts); dimension values are ids and outcomes, nothing else. */
  count(name: string, dimensions: Readonly<Record<string, string>>): void;
}

/**
 * What the steps and handlers log and count through. A count is published at once, as one EMF line with
 * exactly the dimensions given (Powertools' default `service` dimension is cleared: the alarms in
 * cdk/monitoring.ts read the metrics by the dimensions they had before Powertools).
 */
export const lambdaLogger: Logger = {
  info: (message, fields = {}) => powertools.logger.info(message, fields),
  error: (message, fields = {}) => powertools.logger.error(message, fields),
  count: (name, dimensions) => {
    const single = powertools.metrics.singleMetric();
    single.clearDefaultDimensions();
    single.addDimensions({ ...dimensions });
    single.addMetric(name, MetricUnit.Count, 1);
  },
};

/** The ids of an event, if it has them as strings: what a log line may say about it. */
export function idsOf(event: unknown): LogFields {
  if (typeof event !== 'object' || event === null) return {};
  const e = event as Record<string, unknown>;
  const fields: Record<string, string> = {};
  for (const k of ['clusterId', 'runId', 'node'] as const) {
    if (typeof e[k] === 'string') fields[k] = e[k];
  }
  return fields;
}
