/* registry.h: the one place above the backends that names them. */
#ifndef GS_BACKEND_REGISTRY_H
#define GS_BACKEND_REGISTRY_H

/* Registers every backend this build has with the core's device table
 * (gs_backend_register). Called once at start-up, before any device is
 * used (luaopen_torch, main); calling it again does nothing new. */
void gs_backends_register(void);

#endif
