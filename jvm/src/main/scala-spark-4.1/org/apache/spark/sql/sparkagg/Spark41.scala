package org.apache.spark.sql.sparkagg

import org.apache.spark.sql.catalyst.parser.ParserInterface
import org.apache.spark.unsafe.types.{GeographyVal, GeometryVal}

/** Spark 4.1 has geography and geometry getters, which 4.2 dropped again. */
abstract class SparkAggRow extends VariantGetter {
  def getGeography(i: Int): GeographyVal =
    if (i < numKeyFields) keyRow.getGeography(i) else valueAt(i).asInstanceOf[GeographyVal]
  def getGeometry(i: Int): GeometryVal =
    if (i < numKeyFields) keyRow.getGeometry(i) else valueAt(i).asInstanceOf[GeometryVal]
}

abstract class RewritingParser(protected val delegate: ParserInterface)
  extends RoutineParamForwarding with ParameterForwarding
