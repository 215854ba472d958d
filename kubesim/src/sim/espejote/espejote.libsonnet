// kubesim's espejote.libsonnet: the functions a ManagedResource's template imports, written
// here after the interface vshn/espejote documents (docs/lib/README.md): the controller
// hands the template the trigger and the context as two external variables, and the
// library reads them back.
local trigger = std.extVar('__internal_use_espejote_lib_trigger');
local context = std.extVar('__internal_use_espejote_lib_context');

{
  // The name of the trigger that started this render; null for a full reconcile.
  triggerName():: std.get(trigger, 'name'),
  // What a watch trigger saw: {resourceEvent: {apiVersion, kind, name, namespace},
  // resource: the object, or null when it was deleted}.
  triggerData():: std.get(trigger, 'data'),
  // Each context by its name, as a list of objects.
  context():: context,
  // Asks the controller to delete `obj` instead of applying it.
  markForDelete(obj, gracePeriodSeconds=null, propagationPolicy=null, preconditionUID=null, preconditionResourceVersion=null)::
    obj {
      __internal_use_espejote_lib_deletion: {
        delete: true,
        gracePeriodSeconds: gracePeriodSeconds,
        propagationPolicy: propagationPolicy,
        preconditionUID: preconditionUID,
        preconditionResourceVersion: preconditionResourceVersion,
      },
    },
  // Apply options for one object, over the ManagedResource's own.
  applyOptions(obj, fieldManager=null, fieldManagerSuffix=null, force=null, fieldValidation=null)::
    obj {
      __internal_use_espejote_lib_apply_options: {
        fieldManager: fieldManager,
        fieldManagerSuffix: fieldManagerSuffix,
        force: force,
        fieldValidation: fieldValidation,
      },
    },
}
