package org.apache.spark.sql.sparkagg

import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.connector.catalog.CatalogManager
import org.apache.spark.unsafe.types.BinaryView

// What Spark 4.2 brought and every later minor keeps: functions keyed by catalog and namespace, binary views.

private[sparkagg] trait FunctionKeys {
  /** A session's registry keeps temporary functions as system.session.<name> (as spark.udf does). */
  def temporaryFunction(name: String): FunctionIdentifier =
    FunctionIdentifier(name, Some(CatalogManager.SESSION_NAMESPACE), Some(CatalogManager.SYSTEM_CATALOG_NAME))

  /** A built-in's identifier, system.builtin.<name>: registered in one session's registry, it replaces
   *  the built-in for that session only. */
  def builtinFunction(name: String): FunctionIdentifier =
    FunctionIdentifier(name, Some(CatalogManager.BUILTIN_NAMESPACE), Some(CatalogManager.SYSTEM_CATALOG_NAME))
}

private[sparkagg] trait BinaryViewGetter extends KeyedRow {
  def getBinaryView(i: Int): BinaryView =
    if (i < numKeyFields) keyRow.getBinaryView(i) else valueAt(i).asInstanceOf[BinaryView]
}
