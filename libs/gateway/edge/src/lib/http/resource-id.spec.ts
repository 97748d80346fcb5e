import 'reflect-metadata';
import { Reflector } from '@nestjs/core';
import { PATH_METADATA } from '@nestjs/common/constants';
import { GatewayModule } from '../gateway.module';
import { resourceIdShape } from './resource-id';

type Controller = { name: string; prototype: Record<string, unknown> };

/** The route paths of a controller's handlers. */
function routePaths(controller: Controller): string[] {
  return Object.getOwnPropertyNames(controller.prototype).flatMap((name) => {
    const path = Reflect.getMetadata(PATH_METADATA, controller.prototype[name] as object) as string | string[] | undefined;
    return path === undefined ? [] : [path].flat();
  });
}

describe('path ids are checked against their resource’s shape on every route', () => {
  it('has every controller with an :id route declare the shape of its ids', () => {
    const controllers = Reflect.getMetadata('controllers', GatewayModule) as Controller[];
    const withIds = controllers.filter((c) => routePaths(c).some((p) => /(^|\/):id(\/|$)/.test(p)));

    expect(withIds.length).toBeGreaterThanOrEqual(5);
    expect(withIds.filter((c) => !resourceIdShape(new Reflector(), c)).map((c) => c.name)).toEqual([]);
  });
});
