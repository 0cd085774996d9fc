/**
 * Powertools for AWS Lambda (TypeScript) as AWS publishes it: a layer in every commercial region, whose ARN
 * for each release is a public SSM parameter. The functions leave `@aws-lambda-powertools/*` (and the X-Ray
 * SDK the Tracer brings: ≈ 120 KB of a store function's 270) out of their bundles and load them from the
 * layer, as Powertools' documentation has it. The parameter names the exact release installed with
 * ccm-migrate, the one its code is built and tested against.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { aws_lambda as lambda, aws_ssm as ssm } from 'aws-cdk-lib';
import type { Construct } from 'constructs';

/** What the functions import from the layer (bundling.ts leaves these out). */
export const POWERTOOLS_PACKAGES = ['logger', 'metrics', 'tracer'] as const;

/** The installed release of a Powertools package (their package.json is not in their exports). */
export function installedPowertools(pkg: (typeof POWERTOOLS_PACKAGES)[number]): string {
  const entry = createRequire(import.meta.url).resolve(`@aws-lambda-powertools/${pkg}`);
  const root = entry.slice(0, entry.lastIndexOf(`${path.sep}lib${path.sep}`));
  return (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string }).version;
}

/** Powertools releases every package at one version: the logger's names the layer. */
export const POWERTOOLS_VERSION = installedPowertools('logger');

export const POWERTOOLS_LAYER_PARAMETER = `/aws/service/powertools/typescript/generic/all/${POWERTOOLS_VERSION}`;

/** The layer of the installed release, resolved in the stack's region at deploy time. */
export function powertoolsLayer(scope: Construct): lambda.ILayerVersion {
  return lambda.LayerVersion.fromLayerVersionArn(
    scope,
    'PowertoolsLayer',
    ssm.StringParameter.valueForStringParameter(scope, POWERTOOLS_LAYER_PARAMETER),
  );
}
